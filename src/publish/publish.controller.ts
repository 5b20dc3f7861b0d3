import { Body, Controller, HttpCode, Post, UseGuards } from '@nestjs/common';
import { ApiBody, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { ApiErrorResponses } from '../common/api-error-responses.js';
import { NameChangeEventDto, PublishResponseDto } from './publish.dto.js';
import { RequireToken } from '../auth/index.js';
import { PublishRateLimitGuard, RATE_LIMITED_MESSAGE } from '../rate-limit/index.js';
import { NO_LISTENERS_MESSAGE, PublishService } from './publish.service.js';

@ApiTags('events')
@Controller('webhooks/prevnames')
// A controller's guards run before its routes': every publish counts, a refused token too.
@UseGuards(PublishRateLimitGuard)
export class PublishController {
  constructor(private readonly publisher: PublishService) {}

  @Post()
  @HttpCode(200)
  @RequireToken('publish')
  @ApiOperation({
    summary: 'Publish a name change event',
    description:
      'Validates the event, stores it (an identical event is stored once), then broadcasts it to every listener on every instance. 200 once it reached every instance that has listeners; 500 when nobody is listening anywhere, the event being stored all the same. A repeat is broadcast again with its original id. 403 when the user has opted out: nothing is stored or broadcast.',
  })
  @ApiBody({ type: NameChangeEventDto })
  @ApiOkResponse({
    type: PublishResponseDto,
    description: 'Stored, and delivered to every instance that has listeners.',
  })
  @ApiErrorResponses(400, 403, 413, 415, [429, RATE_LIMITED_MESSAGE], [500, NO_LISTENERS_MESSAGE])
  publishNameChange(@Body() body: NameChangeEventDto): Promise<PublishResponseDto> {
    return this.publisher.publishNameChange(body);
  }
}
