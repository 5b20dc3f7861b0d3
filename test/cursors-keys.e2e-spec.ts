/**
 * The key the cursors are signed with: made once in the database, so a cursor holds on every
 * instance that shares it and across restarts, and nowhere else; read when first needed, so
 * an instance that started while Postgres was down signs and checks cursors once it is back.
 */
import { historyPath, INTERNAL_ERROR, NO_LISTENERS, PUBLISH } from './support/api.js';
import { startApp, useApp, type TestApp } from './support/app.js';
import { cursorOfLink } from './support/cursors.js';
import { TestDatabase } from './support/database.js';
import { eventsOf, historyEntry, uniqueUserId, type NameEventBody } from './support/events.js';
import { http, post } from './support/http.js';
import { waitFor } from './support/ports.js';
import { spyOnEachTest } from './support/process-spies.js';
import { SEARCH, SEARCH_AUTH, SEARCH_TOKEN, searchQuery } from './support/search.js';
import { proxiedDatabase, type TcpProxy } from './support/tcp-proxy.js';

const HISTORY_CURSOR_MESSAGE =
  "cursor must be one this service issued, in a Link header of this user's history";
const SEARCH_CURSOR_MESSAGE =
  'cursor must be one this service issued, in a Link header of a name search';
const SEARCH_ENV = { SEARCH_TOKEN, SEARCH_RATE_LIMIT: '0' };

/** A user with four entries, all of them named `name`, stored through `url`. */
async function seed(url: string, name: string) {
  const userId = uniqueUserId('keys');
  const next = eventsOf(userId);
  const bodies: NameEventBody[] = [];
  for (let i = 0; i < 4; i++) {
    const body = { ...next(), name };
    bodies.push(body);
    // Nobody listens: stored, and answered so.
    const res = await post(`${url}${PUBLISH}`, body);
    expect(res.body).toEqual(NO_LISTENERS);
  }
  return { userId, bodies };
}

const historyOf = (app: { url: string }, userId: string, query: string) =>
  http<{ prevnames: unknown[] }>(`${app.url}${historyPath(userId, query)}`);
const searchOf = (app: { url: string }, query: Record<string, string | number>) =>
  http<{ matches: { name: string; changedAt: string }[] }>(
    `${app.url}${SEARCH}${searchQuery(query)}`,
    { headers: SEARCH_AUTH },
  );

describe('cursor keys: one per database, shared by its instances, kept across restarts', () => {
  const fx = useApp({ backend: 'postgres', env: SEARCH_ENV, fixedPort: true });
  const spies = spyOnEachTest();
  let other: TestDatabase | undefined;
  let elsewhere: TestApp | undefined;
  afterAll(async () => {
    await elsewhere?.close();
    await other?.drop();
  });

  const keys = () => fx.db.query<{ id: number; key: Buffer }>('SELECT id, key FROM cursor_keys');

  it('follows a cursor on another instance and after a restart; another database refuses it', async () => {
    const name = `keyed-${uniqueUserId()}`;
    const { userId, bodies } = await seed(fx.url, name);
    const entries = bodies.map(historyEntry);
    const stored = await keys();
    expect(stored).toHaveLength(1);
    expect(stored[0].key).toHaveLength(32);

    const firstPage = await historyOf(fx, userId, '?limit=1');
    const historyCursor = cursorOfLink(firstPage.headers.get('link'));
    const firstMatches = await searchOf(fx, { name, limit: 1 });
    const searchCursor = cursorOfLink(firstMatches.headers.get('link'));
    const second = { history: entries.slice(1, 2), search: [bodies[1].changedAt] };
    /** The second pages, as `app` answers the two cursors. */
    const secondPages = async (app: { url: string }) => {
      const history = await historyOf(app, userId, `?limit=1&cursor=${historyCursor}`);
      const search = await searchOf(app, { name, limit: 1, cursor: searchCursor });
      return {
        status: [history.status, search.status],
        history: history.body.prevnames,
        search: search.body.matches.map((match) => match.changedAt),
      };
    };
    const followed = { status: [200, 200], ...second };
    expect(await secondPages(fx)).toEqual(followed);

    // Another instance on the same database: the cursors of one hold on the other.
    const b = await fx.startInstance();
    expect(await secondPages(b)).toEqual(followed);
    const fromB = await historyOf(b, userId, `?limit=1&cursor=${historyCursor}`);
    const third = await historyOf(
      fx,
      userId,
      `?limit=1&cursor=${cursorOfLink(fromB.headers.get('link'))}`,
    );
    expect({ status: third.status, prevnames: third.body.prevnames }).toEqual({
      status: 200,
      prevnames: entries.slice(2, 3),
    });

    // Restarted: the same key, the same cursors.
    await fx.stop();
    await fx.start();
    expect(await secondPages(fx)).toEqual(followed);
    expect(await keys()).toEqual(stored);

    // Another database has a key of its own: the cursor of this one is a 400 there.
    other = await TestDatabase.create();
    elsewhere = await startApp({ DATABASE_URL: other.url, ...SEARCH_ENV });
    const [otherKey] = await other.query<{ key: Buffer }>('SELECT key FROM cursor_keys');
    expect(otherKey.key.equals(stored[0].key)).toBe(false);
    const refusedHistory = await historyOf(elsewhere, userId, `?limit=1&cursor=${historyCursor}`);
    const refusedSearch = await searchOf(elsewhere, { name, limit: 1, cursor: searchCursor });
    expect([refusedHistory, refusedSearch].map(({ status, body }) => ({ status, body }))).toEqual([
      { status: 400, body: { message: HISTORY_CURSOR_MESSAGE, code: 400 } },
      { status: 400, body: { message: SEARCH_CURSOR_MESSAGE, code: 400 } },
    ]);
    expect(spies.rejections).toEqual([]);
  });
});

describe('cursor keys: an instance started while Postgres is down', () => {
  let proxy: TcpProxy;
  const fx = useApp({
    backend: 'postgres',
    env: async (db) => {
      const proxied = await proxiedDatabase(db!.url);
      proxy = proxied.proxy;
      return { ...SEARCH_ENV, DATABASE_URL: proxied.url };
    },
  });
  afterAll(() => proxy?.close());
  const spies = spyOnEachTest();

  it('answers a cursor 500 while it cannot read the key, garbage 400, and reads the key once back', async () => {
    const name = `late-${uniqueUserId()}`;
    const { userId, bodies } = await seed(fx.url, name);
    const historyCursor = cursorOfLink(
      (await historyOf(fx, userId, '?limit=1')).headers.get('link'),
    );
    const searchCursor = cursorOfLink((await searchOf(fx, { name, limit: 1 })).headers.get('link'));

    proxy.cut();
    const late = await fx.startInstance();
    const withCursors = async () => [
      await historyOf(late, userId, `?limit=1&cursor=${historyCursor}`),
      await searchOf(late, { name, limit: 1, cursor: searchCursor }),
    ];
    expect((await withCursors()).map(({ status, body }) => ({ status, body }))).toEqual([
      { status: 500, body: INTERNAL_ERROR },
      { status: 500, body: INTERNAL_ERROR },
    ]);
    // What has no cursor's shape needs no key: a 400 still.
    const garbage = [
      await historyOf(late, userId, '?limit=1&cursor=garbage'),
      await searchOf(late, { name, limit: 1, cursor: 'garbage' }),
    ];
    expect(garbage.map(({ status, body }) => ({ status, body }))).toEqual([
      { status: 400, body: { message: HISTORY_CURSOR_MESSAGE, code: 400 } },
      { status: 400, body: { message: SEARCH_CURSOR_MESSAGE, code: 400 } },
    ]);

    proxy.restore();
    const [history, search] = await waitFor('the late instance to follow the cursors', async () => {
      const both = await withCursors();
      return both.every((res) => res.status === 200) && both;
    });
    expect(history.body).toEqual({ userId, prevnames: [historyEntry(bodies[1])], code: 200 });
    expect(search.body).toEqual({
      name,
      matches: [{ ...historyEntry(bodies[1]), userId }],
      code: 200,
    });
    expect(spies.rejections).toEqual([]);
    expect(spies.exceptions).toEqual([]);
  });
});
