import {
  BadRequestException,
  Controller,
  Headers,
  MessageEvent,
  Query,
  Req,
  Sse,
  SseSignal,
} from '@nestjs/common';
import {
  ApiExtraModels,
  ApiHeader,
  ApiOperation,
  ApiResponse,
  ApiTags,
  getSchemaPath,
} from '@nestjs/swagger';
import type { Request } from 'express';
import { EMPTY, type Observable } from 'rxjs';
import { ApiErrorResponses, ApiRetryLaterResponse } from '../common/api-error-responses.js';
import { StreamRoute } from '../common/route-traits.js';
import {
  EVENT_ID_MESSAGE,
  EVENT_ID_PATTERN,
  ListenQueryDto,
  NameChangeEventMessageDto,
  NameChangeEventPayloadDto,
  parseEventId,
} from './events.dto.js';
import { EventStreamService, STREAM_SETUP_FAILED } from './event-stream.service.js';
import { TOO_MANY_FROM_ADDRESS_MESSAGE, TOO_MANY_LISTENERS_MESSAGE } from './listener-admission.js';

const STREAM_DESCRIPTION = `A Server-Sent Events stream of name change events, live, from every instance.

Each event is one message: \`id: <stored event id>\` (a decimal string, increasing for newly stored events) and one \`data:\` line holding the JSON \`{"userId","type","name","changedAt"}\`. A repeat of an already stored event is sent again with its original id; drop ids you already have.

The stream opens with a message that has no data: \`id:\` where this client's stream starts (the newest stored event's id, or the Last-Event-ID it resumes from; a browser sends it back when it reconnects, so even a client that never got an event resumes without a gap) and the \`retry:\` hint. An event being broadcast as the stream opens follows at once. A comment line \`: keep-alive\` is sent every SSE_KEEPALIVE_MS (15 s by default).

Reconnect with the \`Last-Event-ID\` header (browsers do it by themselves) or \`?lastEventId=\` to first receive the stored events after that id (up to SSE_REPLAY_LIMIT of the newest), then the live stream, with no gap and no duplicate.

A replay is read a page at a time as the client takes it; replays beyond SSE_REPLAY_CONCURRENCY at once wait their turn with the stream open. A listener that stops reading is disconnected once more than SSE_BUFFER_LIMIT_BYTES wait for it (live events held during its replay count), or once its replay goes untaken for SSE_REPLAY_STALL_MS; it can reconnect and replay. One client address may hold SSE_MAX_LISTENERS_PER_ADDRESS streams on an instance (429 past it). HEAD answers the stream's headers without opening one. When an instance stops, its streams end with a short \`retry:\` so their clients reconnect to another instance.`;

const STREAM_EXAMPLE =
  '\nid: 41\nretry: 3000\n\nid: 42\ndata: {"userId":"123","type":"username","name":"old_name","changedAt":"2024-06-07T15:30:00.000Z"}\n\n: keep-alive\n\n';

@ApiTags('events')
@Controller('webhooks/prevnames')
export class EventsController {
  constructor(private readonly streams: EventStreamService) {}

  @Sse('listen')
  @StreamRoute()
  @ApiOperation({ summary: 'Stream name change events (SSE)', description: STREAM_DESCRIPTION })
  @ApiHeader({
    name: 'Last-Event-ID',
    required: false,
    description: 'Replay the stored events after this id before the live stream.',
    schema: { type: 'string', pattern: EVENT_ID_PATTERN.source },
  })
  @ApiExtraModels(NameChangeEventMessageDto, NameChangeEventPayloadDto)
  @ApiResponse({
    status: 200,
    description: `The event stream: a sequence of NameChangeEventMessage, with \`: keep-alive\` comments between them. (OpenAPI 3.0 cannot say "a stream of": the schema is that of one message.) On the wire:

\`\`\`
${STREAM_EXAMPLE}\`\`\``,
    content: {
      'text/event-stream': {
        schema: { $ref: getSchemaPath(NameChangeEventMessageDto) },
        example: {
          id: '42',
          data: {
            userId: '123',
            type: 'username',
            name: 'old_name',
            changedAt: '2024-06-07T15:30:00.000Z',
          },
        },
      },
    },
  })
  @ApiRetryLaterResponse(
    429,
    'The client address holds SSE_MAX_LISTENERS_PER_ADDRESS streams on this instance already: try again after `Retry-After` seconds.',
    TOO_MANY_FROM_ADDRESS_MESSAGE,
  )
  @ApiErrorResponses(400, [500, STREAM_SETUP_FAILED], [503, TOO_MANY_LISTENERS_MESSAGE])
  listen(
    @Query() query: ListenQueryDto,
    @Headers('last-event-id') lastEventIdHeader: string | undefined,
    @Req() req: Request,
    @SseSignal() signal: AbortSignal,
  ): Promise<Observable<MessageEvent>> {
    const lastEventId = parseLastEventId(lastEventIdHeader, query.lastEventId);
    // Express answers HEAD with the GET route: the stream's headers, and no listener.
    if (req.method === 'HEAD') return Promise.resolve(EMPTY);
    return this.streams.open(req, { userId: query.userId, lastEventId }, signal);
  }
}

/** The header when it is not blank (it wins), else the query's `lastEventId`. */
function parseLastEventId(header = '', query?: string): bigint | undefined {
  const [name, given] = header.trim() ? ['Last-Event-ID', header.trim()] : ['lastEventId', query];
  if (given === undefined) return undefined;
  const id = parseEventId(given);
  if (id === undefined) throw new BadRequestException(`${name} ${EVENT_ID_MESSAGE}`);
  return id;
}
