import type pg from 'pg';
import { historyPath, INTERNAL_ERROR } from './support/api.js';
import { TestDatabase } from './support/database.js';
import { http } from './support/http.js';
import { waitFor } from './support/ports.js';
import { nextLink, SEARCH, SEARCH_AUTH, SEARCH_TOKEN, searchQuery } from './support/search.js';
import { logLines } from './support/logs.js';
import { ServiceProcess, START_TIMEOUT_MS } from './support/service-process.js';
import { proxiedDatabase, type TcpProxy } from './support/tcp-proxy.js';

/** Every line that names the request of this id: its access line, its error line. */
const linesOf = (service: ServiceProcess, id: string) =>
  logLines(service).filter((line) => line.req?.id === id || line.reqId === id);

/** The access log line of the request with this X-Request-Id, once written. */
const accessLine = (service: ServiceProcess, id: string) =>
  waitFor(`the access log line of ${id}`, () =>
    logLines(service).find((line) => line.req?.id === id && line.msg === 'request completed'),
  );

/** The error filter's line of the request with this X-Request-Id, once written. */
const errorLine = (service: ServiceProcess, id: string) =>
  waitFor(`the error line of ${id}`, () =>
    logLines(service).find((line) => line.reqId === id && line.context === 'HttpExceptionFilter'),
  );

/** Letters no UUID, time or hex dump holds: a name that cannot turn up in a log by chance. */
const mark = Array.from({ length: 10 }, () => 'ghjkmnpqrstvwxyz'[Math.floor(Math.random() * 16)]);
const MARK = mark.join('');
/** The name searched for: a space and a non-ASCII letter, so its encoded forms differ. */
const NAME = `Privé ${MARK}`;
/** Its id is logged (in the path): not the mark. */
const HISTORY_USER = `privacy-${Date.now()}`;
const HISTORY_TIMES = ['2024-03-01T10:00:00.000Z', '2024-03-02T10:00:00.000Z'];

const base64 = (text: string) => Buffer.from(text).toString('base64').replace(/=+$/, '');
/** Every form of the name a log line could hold: as typed, cased, encoded as a URL or base64. */
const NAME_FORMS = [
  NAME,
  MARK,
  MARK.toUpperCase(),
  encodeURIComponent(NAME),
  new URLSearchParams({ name: NAME }).toString().slice('name='.length),
  base64(NAME),
  Buffer.from(NAME).toString('base64url'),
  base64(MARK),
];

/** Each cursor's forms: as sent, its payload (base64url of JSON), that payload decoded. */
function cursorForms(cursor: string): string[] {
  const payload = cursor.slice(0, cursor.indexOf('.'));
  return [
    cursor,
    encodeURIComponent(cursor),
    payload,
    Buffer.from(payload, 'base64url').toString(),
  ];
}

/** What of `forbidden` the service wrote, on stdout or stderr, at any level (since `from`). */
const leaked = (service: ServiceProcess, forbidden: string[], from = 0) =>
  forbidden.filter((text) => service.output.slice(from).includes(text));

/**
 * A read after the requests under test: once its access line is in, every line of theirs is
 * (the log is written in order).
 */
let sentinels = 0;
async function allLogged(service: ServiceProcess): Promise<void> {
  const id = `sentinel-${++sentinels}`;
  await http(`${service.url}${historyPath('sentinel')}`, { headers: { 'x-request-id': id } });
  await accessLine(service, id);
}

/**
 * README and docs/privacy.md: a searched name is never logged. No log line, at any level and
 * of any status, holds a request's query string (where a search's name and cursor, and a
 * history's cursor, are), nor an error message quoting it: a line names the request by its
 * route's template, its path and its id.
 */
describe('logs: no searched name, no cursor, in any line', () => {
  let db: TestDatabase;
  let proxy: TcpProxy;
  /** Search on, its Postgres behind a proxy (to cut) with a low statement timeout. */
  let service: ServiceProcess;
  /** Search off: neither SEARCH_TOKEN nor ADMIN_TOKEN. */
  let searchOff: ServiceProcess;
  let searchCursor: string;
  let forbidden: string[];
  const historyCursors: string[] = [];

  beforeAll(
    async () => {
      db = await TestDatabase.create();
      const proxied = await proxiedDatabase(db.url);
      proxy = proxied.proxy;
      const url = new URL(proxied.url);
      // pg takes a connection string's statement_timeout over the pool's (10 s).
      url.searchParams.set('statement_timeout', '2000');
      service = await ServiceProcess.start({
        DATABASE_URL: url.toString(),
        SEARCH_TOKEN,
        SEARCH_RATE_LIMIT: '0',
        LOG_LEVEL: 'trace',
      });
      searchOff = await ServiceProcess.start({ DATABASE_URL: db.url, LOG_LEVEL: 'trace' });
      await db.query(
        `INSERT INTO name_change_events (user_id, type, name, changed_at)
       VALUES ('privacy-a', 'username', $1, '2024-01-01T00:00:00Z'),
              ('privacy-b', 'displayname', $1, '2024-01-02T00:00:00Z'),
              ($2, 'username', $1, $3), ($2, 'displayname', 'other', $4)`,
        [NAME, HISTORY_USER, ...HISTORY_TIMES],
      );
      // The first page, from which the cursor of the next one.
      const first = await http(`${service.url}${SEARCH}${searchQuery({ name: NAME, limit: 1 })}`, {
        headers: SEARCH_AUTH,
      });
      expect(first.status).toBe(200);
      searchCursor = new URL(nextLink(first)!, service.url).searchParams.get('cursor')!;
      forbidden = [...NAME_FORMS, ...cursorForms(searchCursor)];
    },
    2 * START_TIMEOUT_MS + 30_000,
  );

  afterAll(async () => {
    await Promise.all([service?.stop('SIGKILL'), searchOff?.stop('SIGKILL')]);
    await proxy?.close();
    await db?.drop();
  });

  /** The search's query, name and cursor in it, as a client following a Link sends it. */
  const query = (extra: Record<string, string> = {}) =>
    searchQuery({ name: NAME, limit: 1, cursor: searchCursor, ...extra });
  const search = (id: string, q = query(), target = service) =>
    http(`${target.url}${SEARCH}${q}`, { headers: { ...SEARCH_AUTH, 'x-request-id': id } });

  /** A search's access line: its route's template, its path (no query), its id. */
  const searchAccessLine = (id: string, statusCode: number) => ({
    level: 30,
    time: expect.any(Number) as unknown,
    pid: service.pid,
    hostname: expect.any(String) as unknown,
    req: {
      id,
      method: 'GET',
      url: SEARCH,
      remoteAddress: expect.stringMatching(/^(::ffff:)?127\.0\.0\.1$/) as unknown,
    },
    route: SEARCH,
    res: { statusCode },
    responseTime: expect.any(Number) as unknown,
    msg: 'request completed',
  });

  /** The lines of a 5xx search: the error line (template, path, id), then its access line. */
  async function expectSearchErrorLine(id: string, message: string | RegExp) {
    const line = await errorLine(service, id);
    expect(line).toEqual({
      level: 50,
      time: expect.any(Number) as unknown,
      pid: service.pid,
      hostname: expect.any(String) as unknown,
      context: 'HttpExceptionFilter',
      reqId: id,
      method: 'GET',
      route: SEARCH,
      url: SEARCH,
      err: {
        type: 'StorageUnavailableError',
        message: expect.stringMatching(message) as unknown,
        stack: expect.stringMatching(/^StorageUnavailableError: .*\n {4}at /) as unknown,
      },
      msg: expect.stringMatching(/^GET \/api\/prevnames failed: /) as unknown,
    });
    expect(line.msg).toBe(`GET ${SEARCH} failed: ${(line.err as { message: string }).message}`);
    await allLogged(service);
    expect(linesOf(service, id)).toEqual([line, searchAccessLine(id, 500)]);
  }

  it('a search stopped by the statement timeout: the 500, an error line without the name', async () => {
    const from = service.output.length;
    const locker: pg.Client = await db.connect();
    try {
      await locker.query('BEGIN');
      await locker.query('LOCK TABLE name_change_events IN ACCESS EXCLUSIVE MODE');
      const res = await search('privacy-timeout');
      expect({ status: res.status, body: res.body }).toEqual({ status: 500, body: INTERNAL_ERROR });
    } finally {
      await locker.query('ROLLBACK');
      await locker.end();
    }
    await expectSearchErrorLine(
      'privacy-timeout',
      /^canceling statement due to statement timeout \(SQLSTATE 57014\)$/,
    );
    expect(leaked(service, forbidden, from)).toEqual([]);
  });

  it('a search while the database is down: the 500, an error line without the name', async () => {
    const from = service.output.length;
    proxy.cut();
    try {
      const res = await search('privacy-down');
      expect({ status: res.status, body: res.body }).toEqual({ status: 500, body: INTERNAL_ERROR });
    } finally {
      proxy.restore();
    }
    await expectSearchErrorLine('privacy-down', /./);
    await waitFor('the search to answer again', async () => (await search('back')).status === 200);
    await allLogged(service);
    expect(leaked(service, forbidden, from)).toEqual([]);
  });

  /** The issued cursor with its last character changed. */
  const changed = (cursor: string) => `${cursor.slice(0, -1)}${cursor.endsWith('A') ? 'B' : 'A'}`;

  it.each([
    ['a bad limit', 'limit', () => ({ limit: '0' }), 'limit must be an integer between 1 and 1000'],
    [
      'a cursor that was changed',
      'cursor',
      () => ({ cursor: changed(searchCursor) }),
      'cursor must be one this service issued, in a Link header of a name search',
    ],
    [
      'the cursor of another search',
      'name',
      () => ({ name: `${NAME}!` }),
      'cursor was issued for another search: name, type and match must stay as they were',
    ],
  ])(
    'a search refused for %s: the 400, and only its access line',
    async (_case, key, params, message) => {
      const from = service.output.length;
      const id = `privacy-400-${key}`;
      const extra: Record<string, string> = params();
      const res = await search(id, query(extra));
      expect({ status: res.status, body: res.body }).toEqual({
        status: 400,
        body: { message, code: 400 },
      });
      await allLogged(service);
      expect(linesOf(service, id)).toEqual([searchAccessLine(id, 400)]);
      const sent = [...forbidden, ...cursorForms(extra.cursor ?? searchCursor)];
      expect(leaked(service, sent, from)).toEqual([]);
    },
  );

  it('the search off: the 404 of an unknown route, its access line without the name', async () => {
    const from = searchOff.output.length;
    const q = query();
    const res = await search('privacy-search-off', q, searchOff);
    // The very 404 of a route that does not exist, which echoes the target to its sender.
    expect({ status: res.status, body: res.body }).toEqual({
      status: 404,
      body: { message: `Cannot GET ${SEARCH}${q}`, code: 404 },
    });
    const line = await accessLine(searchOff, 'privacy-search-off');
    expect(line).toEqual({
      level: 30,
      time: expect.any(Number) as unknown,
      pid: searchOff.pid,
      hostname: expect.any(String) as unknown,
      req: {
        id: 'privacy-search-off',
        method: 'GET',
        url: SEARCH,
        remoteAddress: expect.stringMatching(/^(::ffff:)?127\.0\.0\.1$/) as unknown,
      },
      route: SEARCH,
      res: { statusCode: 404 },
      responseTime: expect.any(Number) as unknown,
      msg: 'request completed',
    });
    await allLogged(searchOff);
    expect(linesOf(searchOff, 'privacy-search-off')).toEqual([line]);
    expect(leaked(searchOff, forbidden, from)).toEqual([]);
  });

  it('a history page read with its cursor: the page, an access line with the template', async () => {
    const from = service.output.length;
    const path = historyPath(HISTORY_USER);
    const first = await http(`${service.url}${path}?limit=1`);
    expect(first.status).toBe(200);
    const target = nextLink(first)!;
    const cursor = new URL(target, service.url).searchParams.get('cursor')!;
    expect(target).toBe(`${path}?limit=1&cursor=${cursor}`);
    const res = await http(`${service.url}${target}`, {
      headers: { 'x-request-id': 'privacy-history' },
    });
    expect({ status: res.status, body: res.body }).toEqual({
      status: 200,
      body: {
        userId: HISTORY_USER,
        prevnames: [{ type: 'displayname', name: 'other', changedAt: HISTORY_TIMES[1] }],
        code: 200,
      },
    });
    const line = await accessLine(service, 'privacy-history');
    expect(line).toEqual(
      expect.objectContaining({
        level: 30,
        req: {
          id: 'privacy-history',
          method: 'GET',
          url: path,
          remoteAddress: expect.stringMatching(/^(::ffff:)?127\.0\.0\.1$/) as unknown,
        },
        route: '/api/users/{:userId}/prevnames',
        res: { statusCode: 200 },
        msg: 'request completed',
      }),
    );
    await allLogged(service);
    expect(linesOf(service, 'privacy-history')).toEqual([line]);
    historyCursors.push(cursor);
    expect(leaked(service, [...forbidden, ...cursorForms(cursor)], from)).toEqual([]);
  });

  it('wrote none of them in any line of either service, at any level, from its start', async () => {
    await Promise.all([allLogged(service), allLogged(searchOff)]);
    const all = [...forbidden, ...historyCursors.flatMap(cursorForms)];
    expect(leaked(service, all)).toEqual([]);
    expect(leaked(searchOff, all)).toEqual([]);
  });
});
