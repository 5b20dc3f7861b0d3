import { BadRequestException, HttpStatus, Injectable } from '@nestjs/common';
import pLimit from 'p-limit';
import { RetryLaterException } from '../common/http-exception.filter.js';
import type { StoredPosition } from '../common/opaque-cursor.js';
import { MAX_POSTGRES_BIGINT } from '../common/postgres-bigint.js';
import { parseZonedTimestamp } from '../common/timestamp.js';
import { CursorSignerService } from '../cursors/index.js';
import {
  HISTORY_END,
  HISTORY_START,
  NameHistoryRepository,
  type NameEntry,
} from '../name-events/index.js';
import { decodeCursor, encodeCursor, type CursorDirection } from './history-cursor.js';
import { InjectConfig, type ConfigOf } from '../config/config-section.js';
import { historyConfig } from './history.config.js';
import { CURSOR_MESSAGE, type HistoryQueryDto, type HistoryResponseDto } from './history.dto.js';

/** A whole read of more entries than this waits its turn (HISTORY_LONG_READS). */
export const LONG_HISTORY_ENTRIES = 1_000;
export const HISTORY_BUSY_MESSAGE = 'Too many long history reads in progress: retry shortly';
const BUSY_RETRY_AFTER_S = 1;

/** No id is above it: `after=T` leaves out every entry at T, whatever its id. */
const MAX_ID = String(MAX_POSTGRES_BIGINT);

/** A history answer, with the cursors of the pages beside it when there are more. */
export interface HistoryResult {
  body: HistoryResponseDto;
  /** The entries after this page (read forward). */
  next?: string;
  /** The entries before this page (read from `before` backward). */
  prev?: string;
}

@Injectable()
export class HistoryService {
  /** Reads of long whole histories: a few at once, the others waiting their turn. */
  private readonly longReads;

  constructor(
    private readonly events: NameHistoryRepository,
    private readonly cursors: CursorSignerService,
    @InjectConfig(historyConfig) private readonly config: ConfigOf<typeof historyConfig>,
  ) {
    this.longReads = pLimit(config.longReads);
  }

  /**
   * The user's history, or the part of it the query selects: entries strictly after `after`
   * and before `before`; with `limit`, the oldest N of them, or with `before` the N closest
   * before it; a cursor continues from the page it was issued with, in its direction. A
   * cursor this service did not sign for this user is a 400; one that cannot be checked
   * (the key unreadable) rejects with StorageUnavailableError, as the read would.
   */
  async getNameHistory(userId: string, query: HistoryQueryDto): Promise<HistoryResult> {
    const cursor =
      query.cursor === undefined
        ? undefined
        : await decodeCursor(this.cursors, userId, query.cursor);
    if (query.cursor !== undefined && cursor === undefined) {
      throw new BadRequestException(CURSOR_MESSAGE);
    }
    if (!cursor && query.limit === undefined && !query.before && !query.after) {
      const prevnames = await this.readWhole((limit) => this.events.findHistory(userId, limit));
      return { body: { userId, prevnames, code: 200 } };
    }
    let after = query.after ? { at: micros(query.after, 'down'), id: MAX_ID } : HISTORY_START;
    let before = query.before ? { at: micros(query.before, 'up'), id: '0' } : HISTORY_END;
    let fromEnd = query.before !== undefined && query.limit !== undefined;
    if (cursor?.direction === 'next') {
      after = later(after, cursor.position);
      fromEnd = false;
    } else if (cursor?.direction === 'prev') {
      before = earlier(before, cursor.position);
      fromEnd = true;
    }
    const read = (limit?: number) =>
      this.events.findHistoryPage(userId, { after, before, limit, fromEnd });
    if (query.limit === undefined) {
      const prevnames = await this.readWhole((limit) => read(limit).then((page) => page.entries));
      return { body: { userId, prevnames, code: 200 } };
    }
    const page = await read(query.limit);
    const body: HistoryResponseDto = { userId, prevnames: page.entries, code: 200 };
    if (!page.more) return { body };
    return fromEnd
      ? { body, prev: await this.cursorTo(userId, 'prev', page.first!) }
      : { body, next: await this.cursorTo(userId, 'next', page.last!) };
  }

  /**
   * A whole history, or whole range, answered in one body. Most are short and read at once;
   * a long one (more than LONG_HISTORY_ENTRIES) is read again whole, at most
   * HISTORY_LONG_READS at a time, so that concurrent reads of long histories cannot hold more
   * than a few bodies in memory; past HISTORY_LONG_READS_QUEUE waiting, a 503.
   */
  private async readWhole(read: (limit?: number) => Promise<NameEntry[]>): Promise<NameEntry[]> {
    // Not kept while a long one waits: only its length says it is long.
    const short = await read(LONG_HISTORY_ENTRIES + 1).then((entries) =>
      entries.length <= LONG_HISTORY_ENTRIES ? entries : undefined,
    );
    if (short) return short;
    const { activeCount, pendingCount, concurrency } = this.longReads;
    if (activeCount >= concurrency && pendingCount >= this.config.longReadsQueue) {
      throw new RetryLaterException(
        HISTORY_BUSY_MESSAGE,
        HttpStatus.SERVICE_UNAVAILABLE,
        BUSY_RETRY_AFTER_S,
      );
    }
    return this.longReads(() => read());
  }

  private cursorTo(userId: string, direction: CursorDirection, position: StoredPosition) {
    return encodeCursor(this.cursors, userId, { direction, position });
  }
}

/**
 * A timestamp of the query in the repository's microsecond form, rounded down (for `after`)
 * or up (for `before`) when it has finer digits, so that no stored time between the two
 * roundings is let in or left out.
 */
function micros(timestamp: string, rounding: 'down' | 'up'): string {
  const millis = parseZonedTimestamp(timestamp)!.getTime();
  // The digits below the millisecond, as nanoseconds (parseZonedTimestamp keeps whole ms).
  const nanos = Number((/\.(\d+)/.exec(timestamp)?.[1] ?? '').padEnd(9, '0').slice(3, 9));
  const subMillis = Math.floor(nanos / 1000) + (rounding === 'up' && nanos % 1000 !== 0 ? 1 : 0);
  const date = new Date(millis + Math.floor(subMillis / 1000));
  if (date.getUTCFullYear() > 9999) return 'infinity';
  return date.toISOString().replace('Z', `${String(subMillis % 1000).padStart(3, '0')}Z`);
}

/**
 * Order of positions. Times in the microsecond form have one width, so they compare as
 * strings; the infinities, the only other values, do too: `-` sorts before every digit, `i`
 * after.
 */
function compare(a: StoredPosition, b: StoredPosition): number {
  if (a.at !== b.at) return a.at < b.at ? -1 : 1;
  const [x, y] = [BigInt(a.id), BigInt(b.id)];
  return x < y ? -1 : x > y ? 1 : 0;
}

const later = (a: StoredPosition, b: StoredPosition) => (compare(a, b) >= 0 ? a : b);
const earlier = (a: StoredPosition, b: StoredPosition) => (compare(a, b) <= 0 ? a : b);
