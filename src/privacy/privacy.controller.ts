import { applyDecorators, Controller, Delete, Get, Put } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { ApiErrorResponses } from '../common/api-error-responses.js';
import { ApiOffResponse, RequireToken } from '../auth/index.js';
import { ApiUserIdParam, UserIdParam } from '../common/user-id.js';
import { ErasureResponseDto, OptOutResponseDto } from './privacy.dto.js';
import { PrivacyService } from './privacy.service.js';

/** What every administration route may answer besides its 200. */
function ApiAdministration(method: 'GET' | 'PUT' | 'DELETE', route: 'prevnames' | 'opt-out') {
  return applyDecorators(
    ApiOffResponse('admin', `Cannot ${method} /api/users/123456789012345678/${route}`),
    ApiErrorResponses(400, 500),
    ApiUserIdParam(),
  );
}

@ApiTags('privacy')
@Controller('users')
@RequireToken('admin')
export class PrivacyController {
  constructor(private readonly privacy: PrivacyService) {}

  @Delete(':userId/prevnames')
  @ApiOperation({
    summary: "Erase a user's name history",
    description:
      "Deletes every entry of the user's history. Erased events are never replayed to a reconnecting listener (the replay reads what is stored); events already delivered live cannot be recalled. A publish for the user is wholly before the erasure (erased) or wholly after it (kept). Administration: needs ADMIN_TOKEN.",
  })
  @ApiOkResponse({ type: ErasureResponseDto, description: 'Erased.' })
  @ApiAdministration('DELETE', 'prevnames')
  eraseNameHistory(@UserIdParam() userId: string): Promise<ErasureResponseDto> {
    return this.privacy.eraseNameHistory(userId);
  }

  @Put(':userId/opt-out')
  @ApiOperation({
    summary: 'Opt a user out',
    description:
      "Erases the user's history and stops recording them, on every instance: while opted out, a POST for the user is 403 and the detector records nothing. Idempotent. Administration: needs ADMIN_TOKEN.",
  })
  @ApiOkResponse({ type: OptOutResponseDto, description: 'Opted out (`optedOut: true`).' })
  @ApiAdministration('PUT', 'opt-out')
  optOut(@UserIdParam() userId: string): Promise<OptOutResponseDto> {
    return this.privacy.optOut(userId);
  }

  @Delete(':userId/opt-out')
  @ApiOperation({
    summary: 'Opt a user back in',
    description:
      'Recording resumes for the user (what was erased stays erased). Idempotent. Administration: needs ADMIN_TOKEN.',
  })
  @ApiOkResponse({ type: OptOutResponseDto, description: 'Opted in (`optedOut: false`).' })
  @ApiAdministration('DELETE', 'opt-out')
  optIn(@UserIdParam() userId: string): Promise<OptOutResponseDto> {
    return this.privacy.optIn(userId);
  }

  @Get(':userId/opt-out')
  @ApiOperation({
    summary: 'Whether a user is opted out',
    description: 'Administration: needs ADMIN_TOKEN.',
  })
  @ApiOkResponse({ type: OptOutResponseDto, description: "The user's state." })
  @ApiAdministration('GET', 'opt-out')
  getOptOut(@UserIdParam() userId: string): Promise<OptOutResponseDto> {
    return this.privacy.getOptOut(userId);
  }
}
