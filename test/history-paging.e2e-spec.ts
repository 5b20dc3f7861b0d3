import { DataSource } from 'typeorm';
import { encodeCursor, type CursorDirection } from '../src/history/history-cursor.js';
import { NameChangeEvent } from '../src/name-events/name-change-event.entity.js';
import { startApp, type TestApp } from './support/app.js';
import { TestDatabase } from './support/database.js';
import { http } from './support/http.js';

const USER = 'pager';
const CURSOR_MESSAGE =
  "cursor must be one this service issued, in a Link header of this user's history";

interface Entry {
  type: 'username' | 'displayname';
  name: string;
  changedAt: string;
}

/** Runs of equal timestamps, of these lengths: a page boundary splits most of them. */
const RUNS = [7, 1, 12, 3, 1, 9, 2, 5, 1, 16];
const time = (run: number) => `2024-01-${String(run + 1).padStart(2, '0')}T12:00:00.000Z`;

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
const history = stored
  .map((entry, id) => ({ entry, id }))
  .sort((a, b) => a.entry.changedAt.localeCompare(b.entry.changedAt) || a.id - b.id)
  .map(({ entry }) => entry);

interface Page {
  status: number;
  body: { userId: string; prevnames: Entry[]; code: number };
  link: string | null;
}

describe('paging through a history (RFC 8288 Link headers)', () => {
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
        userId: 'a/b <c>"d',
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
  const path = (userId = USER) => `/api/users/${encodeURIComponent(userId)}/prevnames`;

  /** The target of a Link header with exactly one link, of relation `rel`. */
  function target(link: string | null, rel: 'next' | 'prev'): string {
    const match = /^<([^<>]+)>; rel="(next|prev)"$/.exec(link ?? '');
    expect(match?.[2]).toBe(rel);
    return match![1];
  }

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

  it('answers the whole history, ordered by time then storage order, with no Link', async () => {
    const page = await get(path());
    expect(page).toEqual({
      status: 200,
      body: { userId: USER, prevnames: history, code: 200 },
      link: null,
    });
  });

  it.each([1, 2, 3, 5, 7, 8, 12, 19, 56, 57, 58, 1000])(
    'visits every entry exactly once, in order, following next from ?limit=%i',
    async (limit) => {
      const pages = await walk(`${path()}?limit=${limit}`, limit, 'next');
      expect(pages).toHaveLength(Math.ceil(history.length / limit));
      expect(pages.flat()).toEqual(history);
    },
  );

  it.each(RUNS.map((_, run) => time(run)))(
    'answers after=%s with the entries strictly after it, the whole run at that time left out',
    async (at) => {
      const after = history.filter((e) => e.changedAt > at);
      const whole = await get(`${path()}?after=${at}`);
      expect(whole).toEqual({
        status: 200,
        body: { userId: USER, prevnames: after, code: 200 },
        link: null,
      });
      const pages = await walk(`${path()}?limit=4&after=${at}`, 4, 'next');
      expect(pages.flat()).toEqual(after);
    },
  );

  it.each([
    [time(2), 1],
    [time(2), 3],
    [time(3), 5],
    [time(6), 4],
    [time(9), 20],
    ['2024-01-03T12:00:00.001Z', 5],
    ['2024-01-03T11:59:59.999Z', 5],
    ['2024-01-03T13:00:00.000+01:00', 2],
    [time(0), 3],
    ['2030-01-01T00:00:00Z', 6],
  ])(
    'answers before=%s&limit=%i with the entries closest before it, oldest first, prev leading back',
    async (at, limit) => {
      const instant = new Date(at).toISOString();
      const before = history.filter((e) => e.changedAt < instant);
      const page = await get(`${path()}?before=${encodeURIComponent(at)}&limit=${limit}`);
      expect(page.status).toBe(200);
      expect(page.body).toEqual({ userId: USER, prevnames: before.slice(-limit), code: 200 });
      if (before.length <= limit) {
        expect(page.link).toBeNull();
        return;
      }
      // Walking back: each page comes before the one that linked to it.
      const pages = await walk(
        `${path()}?before=${encodeURIComponent(at)}&limit=${limit}`,
        limit,
        'prev',
      );
      expect(pages.reverse().flat()).toEqual(before);
    },
  );

  it('keeps both bounds while paging between them', async () => {
    const [from, to] = [time(1), time(7)];
    const between = history.filter((e) => e.changedAt > from && e.changedAt < to);
    const forward = await walk(`${path()}?after=${from}&before=${to}&limit=4`, 4, 'prev');
    // With `before`, a page is the entries closest to it: walking prev, newest pages first.
    expect(forward.reverse().flat()).toEqual(between);
    const first = await get(`${path()}?after=${from}&before=${to}&limit=4`);
    expect(first.body.prevnames).toEqual(between.slice(-4));
  });

  it('ends a walk that lands exactly on the last entry without a next link', async () => {
    const page = await get(`${path()}?limit=${history.length}`);
    expect(page.body.prevnames).toEqual(history);
    expect(page.link).toBeNull();
  });

  it('tells apart times within one millisecond: the cursor keeps microseconds', async () => {
    // Only SQL can store finer than a millisecond (the API parses to ms), so seeded here.
    const micros = ['.000300', '.000100', '.000200', '.000100', '.000999', '.000000'];
    for (const [i, fraction] of micros.entries()) {
      await db.query(
        `INSERT INTO name_change_events (user_id, type, name, changed_at) VALUES ($1, $2, $3, $4)`,
        ['micro', 'username', `m${i}`, `2024-05-05T05:05:05${fraction}Z`],
      );
    }
    const expected = ['m5', 'm1', 'm3', 'm2', 'm0', 'm4'];
    for (const limit of [1, 2, 4]) {
      const pages = await walk(`${path('micro')}?limit=${limit}`, limit, 'next', 'micro');
      expect(pages.flat()).toEqual(
        expected.map((name) => ({
          type: 'username',
          name,
          changedAt: '2024-05-05T05:05:05.000Z',
        })),
      );
    }
    const before = await walk(
      `${path('micro')}?limit=1&before=2024-05-05T05:05:05.0002Z`,
      1,
      'prev',
      'micro',
    );
    expect(
      before
        .reverse()
        .flat()
        .map((e) => e.name),
    ).toEqual(['m5', 'm1', 'm3']);
  });

  it('escapes the user id in the link target, and the target works', async () => {
    const userId = 'a/b <c>"d';
    const pages = await walk(`${path(userId)}?limit=1`, 1, 'next', userId);
    expect(pages.flat().map((e) => e.name)).toEqual(['a', 'b', 'c']);
    const first = await get(`${path(userId)}?limit=1`);
    expect(target(first.link, 'next')).toMatch(/^\/api\/users\/a%2Fb%20%3Cc%3E%22d\/prevnames\?/);
  });

  describe('cursors', () => {
    let cursor: string;

    beforeAll(async () => {
      const first = await get(`${path()}?limit=5`);
      cursor = new URLSearchParams(target(first.link, 'next').split('?')[1]).get('cursor')!;
    });

    const forged = (direction: string, at: string, id: string) =>
      encodeCursor(USER, { direction: direction as CursorDirection, position: { at, id } });
    const flip = (s: string, i: number) =>
      `${s.slice(0, i)}${s[i] === 'A' ? 'B' : 'A'}${s.slice(i + 1)}`;

    it('continues where the page it came with ended', async () => {
      const page = await get(`${path()}?limit=5&cursor=${cursor}`);
      expect(page.body.prevnames).toEqual(history.slice(5, 10));
    });

    it.each([
      ['a character of the payload changed', () => flip(cursor, 3)],
      ['the last character of the payload changed', () => flip(cursor, cursor.indexOf('.') - 1)],
      ['a character of the check changed', () => flip(cursor, cursor.length - 1)],
      ['the check cut short', () => cursor.slice(0, -1)],
      ['no check', () => cursor.slice(0, cursor.indexOf('.'))],
      ['the dot gone', () => cursor.replace('.', '')],
      ['a character added', () => `${cursor}A`],
      ['empty', () => ''],
      ['made up', () => 'not-a-cursor'],
      ['too long', () => 'x'.repeat(300)],
      [
        'issued for another user',
        () =>
          encodeCursor('someone-else', {
            direction: 'next',
            position: { at: '2024-01-01T12:00:00.000000Z', id: '1' },
          }),
      ],
      [
        'checked, with an unknown direction',
        () => forged('up', '2024-01-01T12:00:00.000000Z', '1'),
      ],
      [
        'checked, with an impossible date',
        () => forged('next', '2024-02-30T12:00:00.000000Z', '1'),
      ],
      [
        'checked, with a time in milliseconds',
        () => forged('next', '2024-01-01T12:00:00.000Z', '1'),
      ],
      ['checked, with id 0', () => forged('next', '2024-01-01T12:00:00.000000Z', '0')],
      [
        'checked, with an id past bigint',
        () => forged('next', '2024-01-01T12:00:00.000000Z', '9223372036854775808'),
      ],
    ])('refuses a cursor %s with a 400', async (_case, make) => {
      const res = await http(`${app.url}${path()}?limit=5&cursor=${encodeURIComponent(make())}`);
      expect(res.status).toBe(400);
      expect(res.body).toEqual({ message: CURSOR_MESSAGE, code: 400 });
    });

    it('refuses two cursors', async () => {
      const res = await http(`${app.url}${path()}?limit=5&cursor=${cursor}&cursor=${cursor}`);
      expect(res.status).toBe(400);
      expect(res.body).toEqual({ message: CURSOR_MESSAGE, code: 400 });
    });

    it('answers a cursor past the last entry with an empty page and no link', async () => {
      const past = forged('next', '2030-01-01T00:00:00.000000Z', '1');
      expect(await get(`${path()}?limit=5&cursor=${past}`)).toEqual({
        status: 200,
        body: { userId: USER, prevnames: [], code: 200 },
        link: null,
      });
    });
  });
});

function escape(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
