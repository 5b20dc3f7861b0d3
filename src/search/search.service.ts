import { BadRequestException, Injectable, Logger } from '@nestjs/common';
import { CursorSignerService } from '../cursors/index.js';
import { NameSearchRepository, SEARCH_START } from '../name-events/index.js';
import { cursorPosition, encodeSearchCursor } from './search-cursor.js';
import {
  PREFIX_MESSAGE,
  PREFIX_MIN_LENGTH,
  SEARCH_DEFAULT_LIMIT,
  type SearchQueryDto,
  type SearchResponseDto,
} from './search.dto.js';
import type { SearchIdentity } from './search-rate-limit.guard.js';

/** A page of a search, with the cursor of the next one while matches remain. */
export interface SearchResult {
  body: SearchResponseDto;
  next?: string;
}

@Injectable()
export class SearchService {
  private readonly logger = new Logger('Search');

  constructor(
    private readonly repository: NameSearchRepository,
    private readonly cursors: CursorSignerService,
  ) {}

  /**
   * Who had this name: the page of matches the query (and its cursor) selects. Each search is
   * logged with the identity of its token, its options and how many matches the page holds;
   * never the name (a log is no place for personal data).
   */
  async searchPreviousNames(query: SearchQueryDto, caller: SearchIdentity): Promise<SearchResult> {
    const match = query.match ?? 'exact';
    if (match === 'prefix' && [...query.name].length < PREFIX_MIN_LENGTH) {
      throw new BadRequestException(PREFIX_MESSAGE);
    }
    const key = { name: query.name, type: query.type, match };
    const after =
      query.cursor === undefined
        ? SEARCH_START
        : await cursorPosition(this.cursors, query.cursor, key);
    const limit = query.limit ?? SEARCH_DEFAULT_LIMIT;
    const page = await this.repository.findMatches({ ...key, after, limit });
    const next = page.next && (await encodeSearchCursor(this.cursors, key, page.next));
    this.logger.log(
      `Name search by the ${caller}: match=${match} type=${query.type ?? 'any'} limit=${limit}${query.cursor === undefined ? '' : ' (next page)'}: ${page.matches.length} match(es)`,
    );
    return { body: { name: query.name, matches: page.matches, code: 200 }, next };
  }
}
