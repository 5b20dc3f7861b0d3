import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Type } from 'class-transformer';
import { IsInt, IsOptional, Max, Min } from 'class-validator';
import { IsZonedTimestamp } from '../common/timestamp.js';
import { IsUserId, USER_ID_MAX_LENGTH } from '../common/user-id.js';
import { NAME_TYPES, type NameType } from '../name-events/name-event.types.js';

export const HISTORY_MAX_LIMIT = 1000;
const LIMIT_MESSAGE = `limit must be an integer between 1 and ${HISTORY_MAX_LIMIT}`;

export class UserIdParamDto {
  @ApiProperty({
    description: 'The user id on the chat platform (URL-encoded).',
    minLength: 1,
    maxLength: USER_ID_MAX_LENGTH,
    example: '123456789012345678',
  })
  @IsUserId()
  userId: string;
}

export class HistoryQueryDto {
  @ApiPropertyOptional({
    description: `At most this many entries (1-${HISTORY_MAX_LIMIT}), the oldest first. Default: all of them.`,
    minimum: 1,
    maximum: HISTORY_MAX_LIMIT,
    type: 'integer',
  })
  @IsOptional()
  @Type(() => Number)
  @IsInt({ message: LIMIT_MESSAGE })
  @Min(1, { message: LIMIT_MESSAGE })
  @Max(HISTORY_MAX_LIMIT, { message: LIMIT_MESSAGE })
  limit?: number;

  @ApiPropertyOptional({
    description: 'Only entries that changed strictly before this time (ISO 8601 with a zone).',
    format: 'date-time',
    example: '2024-06-07T15:30:00.000Z',
  })
  @IsOptional()
  @IsZonedTimestamp()
  before?: string;

  @ApiPropertyOptional({
    description:
      'Only entries that changed strictly after this time (ISO 8601 with a zone). To page forward, pass the last `changedAt` you have.',
    format: 'date-time',
    example: '2024-06-07T15:30:00.000Z',
  })
  @IsOptional()
  @IsZonedTimestamp()
  after?: string;
}

export class NameEntryDto {
  @ApiProperty({ enum: NAME_TYPES, enumName: 'NameType', description: 'Kind of name.' })
  type: NameType;

  @ApiProperty({ description: 'The previous name, exactly as recorded.', example: 'old_name' })
  name: string;

  @ApiProperty({
    description: 'When the change occurred, in UTC with milliseconds.',
    format: 'date-time',
    example: '2024-06-07T15:30:00.000Z',
  })
  changedAt: string;
}

export class HistoryResponseDto {
  @ApiProperty({ example: '123456789012345678' })
  userId: string;

  @ApiProperty({
    type: [NameEntryDto],
    description:
      'Previous names, ordered by changedAt, then by the order they were stored; empty when none are recorded.',
  })
  prevnames: NameEntryDto[];

  @ApiProperty({ enum: [200], example: 200, type: 'integer' })
  code: 200;
}
