import { Controller, Get, Param, Query } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { ApiErrorResponses } from '../common/api-error-responses.js';
import { HistoryQueryDto, HistoryResponseDto, UserIdParamDto } from './history.dto.js';
import { HistoryService } from './history.service.js';

@ApiTags('history')
@Controller('users')
export class HistoryController {
  constructor(private readonly history: HistoryService) {}

  @Get(':userId/prevnames')
  @ApiOperation({
    summary: "A user's name history",
    description:
      'The previous usernames and display names recorded for the user, ordered by `changedAt`, then by the order they were stored. A user with none recorded gets an empty array.',
  })
  @ApiOkResponse({ type: HistoryResponseDto, description: "The user's name history." })
  @ApiErrorResponses(400, 500)
  getNameHistory(
    @Param() { userId }: UserIdParamDto,
    @Query() query: HistoryQueryDto,
  ): Promise<HistoryResponseDto> {
    return this.history.getNameHistory(userId, query);
  }
}
