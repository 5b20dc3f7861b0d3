import fc from 'fast-check';
import { CursorSignerService } from '../src/cursors/cursor-signer.service.js';
import { SEARCH_CURSOR_SCOPE } from '../src/search/search-cursor.js';
import { historyPath } from './support/api.js';
import {
  BAD_IDS,
  BAD_TIMES,
  cursorArbitraries,
  cursorOfLink,
  unkeyedCursor,
} from './support/cursors.js';
import { nameEvent, uniqueUserId } from './support/events.js';
import { http } from './support/http.js';
import {
  matchOf,
  nextLink,
  SEARCH,
  searchQuery,
  useSearchApp,
  type SearchMatch,
} from './support/search.js';

const CURSOR_MESSAGE = 'cursor must be one this service issued, in a Link header of a name search';
const OTHER_QUERY_MESSAGE =
  'cursor was issued for another search: name, type and match must stay as they were';

/** Seconds into 2024, as a publish body's time: few distinct times, so many ties. */
const at = (second: number) => new Date(Date.UTC(2024, 0, 1, 0, 0, second)).toISOString();
const AT = '2024-01-01T00:00:00.000000Z';

/** Paging through the matches with the Link header's cursor. */
describe('the name search: paging', () => {
  const { fx, search, seed, walk } = useSearchApp();
  /** 23 matches of 'Paged' (some of them displaynames), stored out of time order, 5 times shared. */
  const paged = Array.from({ length: 23 }, (_, i) =>
    nameEvent({
      name: i % 3 ? 'paged' : 'PAGED',
      type: i % 4 ? 'username' : 'displayname',
      changedAt: at((i * 7) % 5),
    }),
  );
  const inOrder = (events: typeof paged) =>
    events
      .map((event, stored) => ({ event, stored }))
      .sort((a, b) => a.event.changedAt.localeCompare(b.event.changedAt) || a.stored - b.stored)
      .map(({ event }) => matchOf(event));

  beforeAll(async () => {
    const stream = await fx.listen(`?userId=${uniqueUserId('listener')}`);
    await stream.until((s) => s.messages.length > 0);
    await seed(...paged, nameEvent({ name: 'paged-not' }));
    stream.close();
  });

  it('visits every match exactly once, in order, whatever the limit of each page', async () => {
    const pages = await walk(searchQuery({ name: 'Paged', limit: 4 }), [4, 1, 7, 1000, 2]);
    expect(pages.map((page) => page.length)).toEqual([4, 1, 7, 11]);
    expect(pages.flat()).toEqual(inOrder(paged));
    const even = await walk(searchQuery({ name: 'paged', limit: 23 }));
    expect(even).toEqual([inOrder(paged)]);
  });

  it('pages a type and a prefix as they select', async () => {
    const displaynames = paged.filter((event) => event.type === 'displayname');
    const typed = await walk(searchQuery({ name: 'PAGED', type: 'displayname', limit: 2 }));
    expect(typed.map((page) => page.length)).toEqual([2, 2, 2]);
    expect(typed.flat()).toEqual(inOrder(displaynames));
    const prefix = await walk(searchQuery({ name: 'pag', match: 'prefix', limit: 5 }));
    expect(prefix.flat().map((m) => m.name)).toEqual([
      ...inOrder(paged).map((m) => m.name),
      'paged-not',
    ]);
  });

  it('links the next page with the query, the limit and a cursor', async () => {
    const first = await search(searchQuery({ name: 'Paged', type: 'username', limit: 3 }));
    expect(first.status).toBe(200);
    const link = nextLink(first)!;
    const url = new URL(link, fx.url);
    expect(url.pathname).toBe(SEARCH);
    expect([...url.searchParams.keys()]).toEqual(['name', 'type', 'limit', 'cursor']);
    expect(url.searchParams.get('name')).toBe('Paged');
    expect(url.searchParams.get('limit')).toBe('3');
    // Without a limit, pages of 100; the last page has no link.
    const all = await search(searchQuery({ name: 'paged' }));
    expect(all.body.matches).toHaveLength(23);
    expect(all.headers.get('link')).toBeNull();
  });

  it('pages 100 at a time by default', async () => {
    await fx.db.query(
      `INSERT INTO name_change_events (user_id, type, name, changed_at)
       SELECT 'bulk-' || n, 'username', 'Bulk', '2024-01-01T00:00:00Z' FROM generate_series(1, 150) AS n`,
    );
    const pages = await walk(searchQuery({ name: 'bulk' }));
    expect(pages.map((page) => page.length)).toEqual([100, 50]);
    expect(pages.flat().map((m: SearchMatch) => m.userId)).toEqual(
      Array.from({ length: 150 }, (_, i) => `bulk-${i + 1}`),
    );
  });

  it('pages the longest name, whose cursor is the longest', async () => {
    const longest = [1, 2].map(() => nameEvent({ name: '\u0001"'.repeat(128) }));
    await seed(...longest);
    const pages = await walk(searchQuery({ name: longest[0].name, limit: 1 }));
    expect(pages).toEqual(longest.map((event) => [matchOf(event)]));
  });

  describe('refuses a cursor', () => {
    let cursor: string;
    beforeAll(async () => {
      const first = await search(searchQuery({ name: 'paged', limit: 2 }));
      cursor = new URL(nextLink(first)!, fx.url).searchParams.get('cursor')!;
    });
    const refused = async (query: Record<string, string>, message: string) => {
      const res = await search(searchQuery(query));
      expect(res.status).toBe(400);
      expect(res.headers.get('content-type')).toBe('application/json; charset=utf-8');
      expect(res.body).toEqual({ message, code: 400 });
    };

    it('that was changed, cut, or never issued', async () => {
      const [payload, check] = cursor.split('.');
      const flipped = payload.slice(0, -1) + (payload.endsWith('A') ? 'B' : 'A');
      for (const bad of [
        `${flipped}.${check}`,
        `${payload}.${check.slice(0, -1)}`,
        payload,
        `${payload}.${check}x`,
        'garbage',
        '.',
        `${Buffer.from('["paged",null,"exact","2024-01-01T00:00:00.000000Z","1"]').toString('base64url')}.AAAAAAAAAAAAAAAA`,
        'x'.repeat(4097),
      ]) {
        await refused({ name: 'paged', cursor: bad }, CURSOR_MESSAGE);
      }
    });

    it('of the unkeyed scheme of before, even with the fields of one issued now', async () => {
      const [payload] = cursor.split('.');
      const fields = JSON.parse(Buffer.from(payload, 'base64url').toString()) as unknown[];
      await refused(
        { name: 'paged', cursor: unkeyedCursor(SEARCH_CURSOR_SCOPE, fields) },
        CURSOR_MESSAGE,
      );
      // The cursor of the report: year 0000, which Postgres refused (a 500 for every search
      // batched with it).
      const year0 = unkeyedCursor(SEARCH_CURSOR_SCOPE, [
        'paged',
        null,
        'exact',
        '0000-01-01T00:00:00.000000Z',
        '1',
      ]);
      await refused({ name: 'paged', cursor: year0 }, CURSOR_MESSAGE);
    });

    /** A cursor signed with the service's own key, with whatever fields it is given. */
    const signed = (...fields: unknown[]) =>
      fx.app.get(CursorSignerService).sign(SEARCH_CURSOR_SCOPE, fields);

    it('signed with the service\u2019s key, with the fields of an issued one: followed', async () => {
      const [payload] = cursor.split('.');
      const fields = JSON.parse(Buffer.from(payload, 'base64url').toString()) as unknown[];
      expect(await signed(...fields)).toBe(cursor);
      const page = await search(
        searchQuery({
          name: 'paged',
          limit: 2,
          cursor: await signed('paged', null, 'exact', '0001-01-01T00:00:00.000000Z', '1'),
        }),
      );
      expect(page.status).toBe(200);
      expect(page.body.matches).toEqual(inOrder(paged).slice(0, 2));
    });

    it.each(BAD_TIMES)('signed, whose time is %s', async (_case, time) => {
      await refused(
        { name: 'paged', cursor: await signed('paged', null, 'exact', time, '1') },
        CURSOR_MESSAGE,
      );
      await refused(
        { name: 'pa', match: 'prefix', cursor: await signed('pa', null, 'prefix', time, '1') },
        CURSOR_MESSAGE,
      );
    });

    it.each(BAD_IDS)('signed, whose id is %s', async (_case, id) => {
      await refused(
        { name: 'paged', cursor: await signed('paged', null, 'exact', AT, id) },
        CURSOR_MESSAGE,
      );
    });

    it.each<[string, unknown[], Record<string, string>]>([
      ['a name of null', [null, null, 'exact', AT, '1'], { name: 'paged' }],
      ['a name that is a number', [1, null, 'exact', AT, '1'], { name: '1' }],
      ['a name in an array', [['paged'], null, 'exact', AT, '1'], { name: 'paged' }],
      ['an unknown type', ['paged', 'nickname', 'exact', AT, '1'], { name: 'paged' }],
      [
        'a type in capitals',
        ['paged', 'USERNAME', 'exact', AT, '1'],
        { name: 'paged', type: 'username' },
      ],
      ['an empty type', ['paged', '', 'exact', AT, '1'], { name: 'paged' }],
      ['a type that is a number', ['paged', 0, 'exact', AT, '1'], { name: 'paged' }],
      ['an unknown match', ['paged', null, 'suffix', AT, '1'], { name: 'paged' }],
      ['a match of null', ['paged', null, null, AT, '1'], { name: 'paged' }],
      ['no fields', [], { name: 'paged' }],
      ['four fields', ['paged', null, 'exact', AT], { name: 'paged' }],
      ['six fields', ['paged', null, 'exact', AT, '1', '1'], { name: 'paged' }],
      ['the fields of a history cursor', ['next', AT, '1'], { name: 'paged' }],
    ])('signed, with %s', async (_case, fields, query) => {
      await refused({ ...query, cursor: await signed(...fields) }, CURSOR_MESSAGE);
    });

    it('signed, with any fields: a page or a 400, never a 500 (fast-check)', async () => {
      const { time, id, any } = cursorArbitraries;
      const fields = fc.oneof(
        fc.tuple(
          fc.oneof(fc.constant('paged'), any),
          fc.oneof(fc.constant(null), fc.constantFrom('username', 'displayname'), any),
          fc.oneof(fc.constantFrom('exact', 'prefix'), any),
          time,
          id,
        ),
        fc.array(any, { maxLength: 6 }),
      );
      await fc.assert(
        fc.asyncProperty(fields, async (signedFields) => {
          const res = await search(
            searchQuery({ name: 'paged', limit: 3, cursor: await signed(...signedFields) }),
          );
          if (res.status === 200) return;
          expect(res.status).toBe(400);
          expect([
            { message: CURSOR_MESSAGE, code: 400 },
            { message: OTHER_QUERY_MESSAGE, code: 400 },
          ]).toContainEqual(res.body);
        }),
        { numRuns: 300 },
      );
    });

    it('issued for another search: another name, type or match', async () => {
      await refused({ name: 'PAGED', cursor }, OTHER_QUERY_MESSAGE);
      const other = await signed('another', null, 'exact', AT, '1');
      await refused({ name: 'paged', cursor: other }, OTHER_QUERY_MESSAGE);
      await refused({ name: 'paged', type: 'username', cursor }, OTHER_QUERY_MESSAGE);
      await refused({ name: 'paged', match: 'prefix', cursor }, OTHER_QUERY_MESSAGE);
      // An explicit match=exact is the default it was issued with.
      expect((await search(searchQuery({ name: 'paged', match: 'exact', cursor }))).status).toBe(
        200,
      );
    });

    it("issued by a user's history", async () => {
      const userId = paged[0].userId;
      await seed(nameEvent({ userId, name: 'second' }));
      const history = await http(`${fx.url}${historyPath(userId, '?limit=1')}`);
      const link = history.headers.get('link')!;
      const historyCursor = new URL(/<([^>]+)>/.exec(link)![1], fx.url).searchParams.get('cursor')!;
      await refused({ name: 'paged', cursor: historyCursor }, CURSOR_MESSAGE);
    });
  });

  it('answers each search sent beside a bad cursor with its own page: one statement per search', async () => {
    const names = Array.from({ length: 7 }, (_, i) => `beside-${i}`);
    const events = names.flatMap((name, i) =>
      Array.from({ length: i + 1 }, (_, n) => nameEvent({ name, changedAt: at(n) })),
    );
    await seed(...events);
    const expected = (name: string) => events.filter((e) => e.name === name).map(matchOf);
    const firstPage = await search(searchQuery({ name: names[6], limit: 3 }));
    const second = cursorOfLink(firstPage.headers.get('link'));
    const year0 = await fx.app
      .get(CursorSignerService)
      .sign(SEARCH_CURSOR_SCOPE, ['paged', null, 'exact', '0000-01-01T00:00:00.000000Z', '1']);
    // Each round sends the bad search at another place among the seven good ones.
    for (let round = 0; round < 8; round++) {
      const queries = names.map((name, i) =>
        i === 6 ? searchQuery({ name, limit: 3, cursor: second }) : searchQuery({ name }),
      );
      queries.splice(round, 0, searchQuery({ name: 'paged', cursor: year0 }));
      const answers = await Promise.all(queries.map((query) => search(query)));
      expect(answers.map(({ status, body }) => ({ status, body }))).toEqual(
        queries.map((query) => {
          if (query.includes(encodeURIComponent(year0)))
            return { status: 400, body: { message: CURSOR_MESSAGE, code: 400 } };
          const name = new URLSearchParams(query).get('name')!;
          const matches = name === names[6] ? expected(name).slice(3, 6) : expected(name);
          return { status: 200, body: { name, matches, code: 200 } };
        }),
      );
    }
  });
});
