import { BadRequestException, Controller, Get, Headers, Query, Req, Res } from '@nestjs/common';
import { ApiHeader, ApiOperation, ApiResponse, ApiTags } from '@nestjs/swagger';
import type { Request, Response } from 'express';
import { ApiErrorResponses } from '../common/api-error-responses.js';
import { EVENT_ID_MESSAGE, EVENT_ID_PATTERN, ListenQueryDto, parseEventId } from './events.dto.js';
import { EventStreamService } from './event-stream.service.js';

const STREAM_DESCRIPTION = `A Server-Sent Events stream of name change events, live, from every instance.

Each event is one message: \`id: <stored event id>\` (a decimal string, increasing for newly stored events) and one \`data:\` line holding the JSON \`{"userId","type","name","changedAt"}\`. A repeat of an already stored event is sent again with its original id; drop ids you already have.

The stream opens with a \`retry:\` hint and, unless it resumes from a Last-Event-ID, an \`id:\` line with no data: the id of the newest stored event, where this client's stream starts (a browser sends it back when it reconnects, so even a client that never got an event resumes without a gap; an event being broadcast as the stream opens follows that id at once). A comment line \`: keep-alive\` is sent every SSE_KEEPALIVE_MS (15 s by default).

Reconnect with the \`Last-Event-ID\` header (browsers do it by themselves) or \`?lastEventId=\` to first receive the stored events after that id (up to SSE_REPLAY_LIMIT of the newest), then the live stream, with no gap and no duplicate.

A listener that stops reading is disconnected once its unsent data passes SSE_BUFFER_LIMIT_BYTES; it can reconnect and replay.`;

@ApiTags('events')
@Controller('webhooks/prevnames')
export class EventsController {
  constructor(private readonly streams: EventStreamService) {}

  @Get('listen')
  @ApiOperation({ summary: 'Stream name change events (SSE)', description: STREAM_DESCRIPTION })
  @ApiHeader({
    name: 'Last-Event-ID',
    required: false,
    description: 'Replay the stored events after this id before the live stream.',
    schema: { type: 'string', pattern: EVENT_ID_PATTERN.source },
  })
  @ApiResponse({
    status: 200,
    description: 'The event stream.',
    content: {
      'text/event-stream': {
        schema: { type: 'string' },
        example:
          'retry: 3000\nid: 41\n\nid: 42\ndata: {"userId":"123","type":"username","name":"old_name","changedAt":"2024-06-07T15:30:00.000Z"}\n\n: keep-alive\n\n',
      },
    },
  })
  @ApiErrorResponses(400, 500, 503)
  async listen(
    @Query() query: ListenQueryDto,
    @Headers('last-event-id') lastEventIdHeader: string | undefined,
    @Req() req: Request,
    @Res() res: Response,
  ): Promise<void> {
    await this.streams.open(req, res, {
      userId: query.userId,
      lastEventId: parseLastEventId(lastEventIdHeader, query.lastEventId),
    });
  }
}

function parseLastEventId(
  header: string | undefined,
  query: string | undefined,
): bigint | undefined {
  if (header !== undefined && header.trim() !== '') {
    const id = parseEventId(header.trim());
    if (id === undefined) throw new BadRequestException(`Last-Event-ID ${EVENT_ID_MESSAGE}`);
    return id;
  }
  if (query === undefined) return undefined;
  const id = parseEventId(query);
  if (id === undefined) throw new BadRequestException(`lastEventId ${EVENT_ID_MESSAGE}`);
  return id;
}
