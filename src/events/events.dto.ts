import { ApiPropertyOptional } from '@nestjs/swagger';
import { IsOptional, Matches } from 'class-validator';
import { IsUserId, USER_ID_MAX_LENGTH } from '../common/user-id.js';

export const EVENT_ID_PATTERN = /^\d{1,19}$/;
export const EVENT_ID_MESSAGE = 'must be a stored event id (a non-negative integer)';
/** Ids are Postgres bigints: a larger number is no id, and Postgres would refuse it (500). */
const MAX_EVENT_ID = 9_223_372_036_854_775_807n;

/** The event id in `value`, or undefined when it is not one. */
export function parseEventId(value: string): bigint | undefined {
  if (!EVENT_ID_PATTERN.test(value)) return undefined;
  const id = BigInt(value);
  return id <= MAX_EVENT_ID ? id : undefined;
}

export class ListenQueryDto {
  @ApiPropertyOptional({
    description: "Only this user's events (replay and live).",
    minLength: 1,
    maxLength: USER_ID_MAX_LENGTH,
  })
  @IsOptional()
  @IsUserId()
  userId?: string;

  @ApiPropertyOptional({
    description:
      'For clients that cannot set headers: replay the stored events after this id, as the `Last-Event-ID` header does (the header wins when both are sent).',
    pattern: EVENT_ID_PATTERN.source,
    example: '42',
  })
  @IsOptional()
  @Matches(EVENT_ID_PATTERN, { message: `lastEventId ${EVENT_ID_MESSAGE}` })
  lastEventId?: string;
}
