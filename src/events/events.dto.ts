import { ApiProperty, ApiPropertyOptional, ApiSchema } from '@nestjs/swagger';
import { IsOptional, Matches } from 'class-validator';
import { MAX_POSTGRES_BIGINT } from '../common/postgres-bigint.js';
import { IsUserId, USER_ID_MAX_LENGTH } from '../common/user-id.js';
import { SentNameChangeEventDto } from '../publish/index.js';

export const EVENT_ID_PATTERN = /^\d{1,19}$/;
export const EVENT_ID_MESSAGE = 'must be a stored event id (a non-negative integer)';

/** The event id in `value`, or undefined when it is not one. */
export function parseEventId(value: string): bigint | undefined {
  if (!EVENT_ID_PATTERN.test(value)) return undefined;
  const id = BigInt(value);
  return id <= MAX_POSTGRES_BIGINT ? id : undefined;
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

/**
 * The data of a stream message: a stored event, as every listener receives it. Its own
 * schema, so that generated clients get a type for what they parse out of `data:`.
 */
@ApiSchema({
  name: 'NameChangeEvent',
  description:
    "A stored name change event: the JSON of a stream message's `data:` line. `name` is the name the user had before the change.",
})
export class NameChangeEventPayloadDto extends SentNameChangeEventDto {}

/**
 * One message of the stream, field by field (the `text/event-stream` framing aside): what an
 * SSE client hands its application. Comments (`: keep-alive`) are not messages.
 */
@ApiSchema({
  name: 'NameChangeEventMessage',
  description:
    'One Server-Sent Events message of the stream. An event: `id` and `data` (a NameChangeEvent, sent as one line of JSON). The first message of a stream: `id` (where it starts) and `retry`, no `data`.',
})
export class NameChangeEventMessageDto {
  @ApiProperty({
    description: 'The stored event id (a decimal string): send it back as Last-Event-ID.',
    pattern: EVENT_ID_PATTERN.source,
    example: '42',
  })
  id: string;

  @ApiPropertyOptional({
    type: () => NameChangeEventPayloadDto,
    description: 'The event, as one line of JSON; absent from the first message.',
  })
  data?: NameChangeEventPayloadDto;

  @ApiPropertyOptional({
    type: 'integer',
    description: 'Reconnection delay in ms (SSE_RETRY_MS), on the first message.',
    example: 3000,
  })
  retry?: number;
}
