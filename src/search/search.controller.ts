import { Controller, Get, Query, Res, UseGuards } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import type { Response } from 'express';
import {
  ApiErrorResponses,
  ApiRetryLaterResponse,
  linkHeader,
} from '../common/api-error-responses.js';
import { SearchQueryDto, SearchResponseDto } from './search.dto.js';
import { SearchService } from './search.service.js';
import { ApiOffResponse, AuthenticatedAs, RequireToken } from '../auth/index.js';
import {
  RATE_LIMITED_MESSAGE,
  SearchRateLimitGuard,
  type SearchIdentity,
} from './search-rate-limit.guard.js';

const LINK_DESCRIPTION =
  'RFC 8288 link to the next page, present only while matches remain: `rel="next"`. Following it visits every match exactly once, in order. The target keeps `name`, `type`, `match` and `limit` and adds an opaque `cursor`; the limit may be changed on the way.';

@ApiTags('search')
@Controller('prevnames')
@RequireToken('search')
export class SearchController {
  constructor(private readonly search: SearchService) {}

  @Get()
  // After the controller's token guard: counted against the token the search came with.
  @UseGuards(SearchRateLimitGuard)
  @ApiOperation({
    summary: 'Who had this name',
    description:
      'Every recorded previous name equal to `name` ignoring case (Unicode lower case, after NFC normalisation; with `match=prefix`, every one that starts with it), with its user: oldest `changedAt` first, then in the order they were stored. Erased and opted-out users never appear. Paged: follow the `Link` header. Needs SEARCH_TOKEN (or ADMIN_TOKEN); each search is rate limited per token and logged with which token it came with.',
  })
  @ApiOkResponse({
    type: SearchResponseDto,
    description: 'The matches of this page.',
    headers: linkHeader(
      LINK_DESCRIPTION,
      '</api/prevnames?name=old_name&limit=100&cursor=WyJvbGRfbmFtZSIsbnVsbCwiZXhhY3QiLCIyMDI0LTA2LTA3VDE1OjMwOjAwLjAwMDAwMFoiLCI0MiJd.I_8sekirjAKhDrycT3vW1g>; rel="next"',
    ),
  })
  @ApiOffResponse('search', 'Cannot GET /api/prevnames?name=old_name')
  @ApiRetryLaterResponse(
    429,
    "Past the token's budget (SEARCH_RATE_LIMIT per SEARCH_RATE_WINDOW_MS): try again after `Retry-After` seconds.",
    RATE_LIMITED_MESSAGE,
  )
  @ApiErrorResponses([400, 'name is required'], 500)
  async searchPreviousNames(
    @Query() query: SearchQueryDto,
    @AuthenticatedAs() caller: SearchIdentity,
    @Res({ passthrough: true }) res: Response,
  ): Promise<SearchResponseDto> {
    const result = await this.search.searchPreviousNames(query, caller);
    if (result.next) res.setHeader('Link', linkTo(res.req.path, query, result.next));
    return result.body;
  }
}

/** The Link header of the next page: the same search from the cursor, with the same limit. */
function linkTo(path: string, query: SearchQueryDto, cursor: string): string {
  const params = new URLSearchParams({ name: query.name });
  if (query.type) params.set('type', query.type);
  if (query.match) params.set('match', query.match);
  if (query.limit !== undefined) params.set('limit', String(query.limit));
  params.set('cursor', cursor);
  return `<${path}?${params.toString()}>; rel="next"`;
}
