import { ApiProperty, ApiPropertyOptional, OmitType } from '@nestjs/swagger';
import { IsOptional, IsString, MaxLength } from 'class-validator';
import { IsZonedTimestamp } from '../common/timestamp.js';
import { IsIntegerBetween } from '../config/transforms.js';
import { SentNameChangeEventDto } from '../publish/index.js';

export const HISTORY_MAX_LIMIT = 1000;
const LIMIT_MESSAGE = `limit must be an integer between 1 and ${HISTORY_MAX_LIMIT}`;

export const CURSOR_MESSAGE =
  "cursor must be one this service issued, in a Link header of this user's history";
/** Longer than any cursor issued: a cursor is a few dozen characters. */
const CURSOR_MAX_LENGTH = 256;

export class HistoryQueryDto {
  @ApiPropertyOptional({
    description: `At most this many entries (1-${HISTORY_MAX_LIMIT}): the oldest of the selection, or with \`before\` the ones closest before it. While more remain, the answer carries a \`Link\` header (RFC 8288) to the next page. Default: all of them, no \`Link\`.`,
    minimum: 1,
    maximum: HISTORY_MAX_LIMIT,
    type: 'integer',
  })
  @IsIntegerBetween(1, HISTORY_MAX_LIMIT, LIMIT_MESSAGE)
  limit?: number;

  @ApiPropertyOptional({
    description:
      'Only entries that changed strictly before this time (ISO 8601 with a zone). With `limit`, the page is the `limit` entries closest before it (still oldest first), and its `Link` has `rel="prev"` to the entries before those.',
    format: 'date-time',
    example: '2024-06-07T15:30:00.000Z',
  })
  @IsOptional()
  @IsZonedTimestamp()
  before?: string;

  @ApiPropertyOptional({
    description:
      'Only entries that changed strictly after this time (ISO 8601 with a zone). To page, follow the `Link` header instead: entries that share a time are never split or repeated that way.',
    format: 'date-time',
    example: '2024-06-07T15:30:00.000Z',
  })
  @IsOptional()
  @IsZonedTimestamp()
  after?: string;

  @ApiPropertyOptional({
    description:
      'Where a page continues: opaque, taken from a `Link` header of this user\'s history (`rel="next"`: the entries after the page it came with; `rel="prev"`: the entries before it). A cursor that was changed, or issued for another user, is a 400.',
    maxLength: CURSOR_MAX_LENGTH,
    example: 'WyJuZXh0IiwiMjAyNC0wNi0wN1QxNTozMDowMC4wMDAwMDBaIiwiNDIiXQ.7K0Ywp6J9Ljw2EX0q4mZ8A',
  })
  @IsOptional()
  @IsString({ message: CURSOR_MESSAGE })
  @MaxLength(CURSOR_MAX_LENGTH, { message: CURSOR_MESSAGE })
  cursor?: string;
}

/** One entry of a user's history: a sent event without its user id. */
export class NameEntryDto extends OmitType(SentNameChangeEventDto, ['userId']) {}

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
