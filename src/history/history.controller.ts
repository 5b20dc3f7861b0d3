import { Controller, Get, Query, Res } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import type { Response } from 'express';
import {
  ApiErrorResponses,
  ApiRetryLaterResponse,
  linkHeader,
} from '../common/api-error-responses.js';
import { ApiUserIdParam, UserIdParam } from '../common/user-id.js';
import { HistoryQueryDto, HistoryResponseDto } from './history.dto.js';
import {
  HISTORY_BUSY_MESSAGE,
  HistoryService,
  LONG_HISTORY_ENTRIES,
  type HistoryResult,
} from './history.service.js';

const LINK_DESCRIPTION =
  'RFC 8288 links to the rest of the selection, present only with `limit` and only while entries remain: `rel="next"` to the entries after this page (following it from `?limit=N` visits every entry exactly once, in order, whatever times they share), or, for a page taken with `before`, `rel="prev"` to the entries before it. The target keeps `limit` (and `before`, or `after`) and adds an opaque `cursor`.';

@ApiTags('history')
@Controller('users')
export class HistoryController {
  constructor(private readonly history: HistoryService) {}

  // `{:userId}`: an empty id (`/users//prevnames`) reaches the validation, which refuses it
  // with the 400 of any id of the wrong length, instead of falling through to a 404.
  @Get('{:userId}/prevnames')
  @ApiOperation({
    summary: "A user's name history",
    description:
      'The previous usernames and display names recorded for the user, ordered by `changedAt`, then by the order they were stored. A user with none recorded gets an empty array. With `limit`, one page at a time: follow the `Link` header.',
  })
  @ApiOkResponse({
    type: HistoryResponseDto,
    description: "The user's name history.",
    headers: linkHeader(
      LINK_DESCRIPTION,
      '</api/users/123456789012345678/prevnames?limit=2&cursor=WyJuZXh0IiwiMjAyNC0wNi0wN1QxNTozMDowMC4wMDAwMDBaIiwiNDIiXQ.7K0Ywp6J9Ljw2EX0q4mZ8A>; rel="next"',
    ),
  })
  @ApiUserIdParam()
  @ApiRetryLaterResponse(
    503,
    `A whole history (no \`limit\`) longer than ${LONG_HISTORY_ENTRIES} entries, while HISTORY_LONG_READS such reads run and HISTORY_LONG_READS_QUEUE wait on this instance: try again after \`Retry-After\` seconds, or read it in pages.`,
    HISTORY_BUSY_MESSAGE,
  )
  @ApiErrorResponses(400, 500)
  async getNameHistory(
    @UserIdParam() userId: string,
    @Query() query: HistoryQueryDto,
    @Res({ passthrough: true }) res: Response,
  ): Promise<HistoryResponseDto> {
    const result = await this.history.getNameHistory(userId, query);
    const links = linksOf(res.req.path, query, result);
    if (links) res.setHeader('Link', links);
    return result.body;
  }
}

/** The Link header of a page: its next (or previous) page, with the same limit and bound. */
function linksOf(path: string, query: HistoryQueryDto, result: HistoryResult): string | undefined {
  // The path as the client sent it, with anything a Link target must not hold escaped.
  const target = path.replace(/[^\w\-.~!$&'()*+,;=:@%/]/g, (c) => encodeURIComponent(c));
  const link = (cursor: string, bound: Record<string, string | undefined>, rel: string) => {
    const params = new URLSearchParams({ limit: String(query.limit) });
    for (const [key, value] of Object.entries(bound)) if (value) params.set(key, value);
    params.set('cursor', cursor);
    return `<${target}?${params.toString()}>; rel="${rel}"`;
  };
  if (result.next) return link(result.next, { before: query.before }, 'next');
  if (result.prev) return link(result.prev, { after: query.after }, 'prev');
  return undefined;
}
