import { historyPath } from './support/api.js';
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

    it('issued for another search: another name, type or match', async () => {
      await refused({ name: 'PAGED', cursor }, OTHER_QUERY_MESSAGE);
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
});
