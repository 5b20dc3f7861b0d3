import { DataSource } from 'typeorm';
import { NameChangeEvent } from '../../src/name-events/name-change-event.entity.js';
import { startApp, type TestApp } from './app.js';
import { TestDatabase } from './database.js';
import { http } from './http.js';

/**
 * A long history for the paging tests: user `pager`'s, whose entries come in runs of equal
 * timestamps stored out of time order, and a user whose id needs escaping in a URL.
 */

export const USER = 'pager';
/** A user id that needs escaping in a path and in a Link header. */
export const AWKWARD_USER = 'a/b <c>"d';

export interface Entry {
  type: 'username' | 'displayname';
  name: string;
  changedAt: string;
}

/** Runs of equal timestamps, of these lengths: a page boundary splits most of them. */
export const RUNS = [7, 1, 12, 3, 1, 9, 2, 5, 1, 16];
export const time = (run: number) => `2024-01-${String(run + 1).padStart(2, '0')}T12:00:00.000Z`;

/**
 * The rows in the order they are stored (so their ids grow in this order), and the history in
 * the order it must come out: by changedAt, then by storage order. Runs are stored
 * interleaved and out of time order, so neither order follows from the other.
 */
const stored: Entry[] = [];
for (let round = 0; stored.length < RUNS.reduce((a, b) => a + b); round++) {
  for (const run of [5, 0, 9, 2, 7, 1, 8, 3, 6, 4]) {
    if (round < RUNS[run]) {
      stored.push({
        type: round % 2 ? 'displayname' : 'username',
        name: `run${run}-${round}`,
        changedAt: time(run),
      });
    }
  }
}
export const history = stored
  .map((entry, id) => ({ entry, id }))
  .sort((a, b) => a.entry.changedAt.localeCompare(b.entry.changedAt) || a.id - b.id)
  .map(({ entry }) => entry);

export interface Page {
  status: number;
  body: { userId: string; prevnames: Entry[]; code: number };
  link: string | null;
}

/** The history route's path for `userId`. */
export const path = (userId = USER) => `/api/users/${encodeURIComponent(userId)}/prevnames`;

/** The target of a Link header with exactly one link, of relation `rel`. */
export function target(link: string | null, rel: 'next' | 'prev'): string {
  const match = /^<([^<>]+)>; rel="(next|prev)"$/.exec(link ?? '');
  expect(match?.[2]).toBe(rel);
  return match![1];
}

/**
 * The application of a describe block (Postgres, no Redis) with the history above stored,
 * and the ways its tests read pages. Call in the describe block.
 */
export function usePagedHistory() {
  let db: TestDatabase;
  let app: TestApp;

  beforeAll(async () => {
    db = await TestDatabase.create();
    app = await startApp({ DATABASE_URL: db.url });
    const rows = app.app.get(DataSource).getRepository(NameChangeEvent);
    // One by one, so the ids follow the order above exactly.
    for (const entry of stored)
      await rows.insert({ ...entry, userId: USER, changedAt: new Date(entry.changedAt) });
    await rows.insert(
      ['a', 'b', 'c'].map((name, i) => ({
        userId: AWKWARD_USER,
        type: 'username' as const,
        name,
        changedAt: new Date(time(i)),
      })),
    );
  });

  afterAll(async () => {
    await app.close();
    await db.drop();
  });

  const get = async (pathAndQuery: string): Promise<Page> => {
    const res = await http<Page['body']>(`${app.url}${pathAndQuery}`);
    return { status: res.status, body: res.body, link: res.headers.get('link') };
  };

  /** Follows `rel` links from `start` to the end, checking each page on the way. */
  async function walk(start: string, limit: number, rel: 'next' | 'prev', userId = USER) {
    const pages: Entry[][] = [];
    let next: string | undefined = start;
    while (next !== undefined) {
      const page = await get(next);
      expect(page.status).toBe(200);
      expect(Object.keys(page.body).sort()).toEqual(['code', 'prevnames', 'userId']);
      expect(page.body.userId).toBe(userId);
      expect(page.body.code).toBe(200);
      expect(page.body.prevnames.length).toBeLessThanOrEqual(limit);
      pages.push(page.body.prevnames);
      if (page.link === null) break;
      expect(page.body.prevnames).toHaveLength(limit);
      next = target(page.link, rel);
      expect(next).toMatch(
        new RegExp(
          `^${escape(path(userId))}\\?limit=${limit}(&(before|after)=[^&]+)?&cursor=[\\w-]+\\.[\\w-]+$`,
        ),
      );
      if (pages.length > 200) throw new Error('The links go round in circles');
    }
    return pages;
  }

  return {
    get url() {
      return app.url;
    },
    get db() {
      return db;
    },
    /** One page: its status, body and Link header. */
    get,
    walk,
  };
}

function escape(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
