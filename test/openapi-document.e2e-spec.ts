import { redisEnv, startApp, type TestApp } from './support/app.js';
import { TestDatabase } from './support/database.js';
import { http, type HttpResult } from './support/http.js';
import { SseStream } from './support/sse.js';
import { documentedEvent, openApiDocument } from './support/openapi-document.js';

interface Example {
  operationId: string;
  method: string;
  path: string;
  status: string;
  example: unknown;
}

const document = openApiDocument;

/** Every error the document shows, with its example body. */
const examples: Example[] = Object.entries(document.paths).flatMap(([path, operations]) =>
  Object.entries(operations).flatMap(([method, operation]) =>
    Object.entries(operation.responses)
      .filter(([status]) => Number(status) >= 400)
      .map(([status, response]) => ({
        operationId: operation.operationId,
        method,
        path,
        status,
        example: response.content?.['application/json']?.example,
      })),
  ),
);

const TOKEN = 'a-publish-token-for-the-document-test';
const ADMIN_TOKEN = 'an-admin-token-for-the-document-test';
const ADMIN = { authorization: `Bearer ${ADMIN_TOKEN}` };
/** The administration routes: operation, method, path below /api/users/<id>/. */
const ADMINISTRATION = [
  ['eraseNameHistory', 'DELETE', 'prevnames'],
  ['optOut', 'PUT', 'opt-out'],
  ['optIn', 'DELETE', 'opt-out'],
  ['getOptOut', 'GET', 'opt-out'],
] as const;
const event = documentedEvent;

/**
 * The document says what is sent: each error it shows, the service answers with exactly
 * that body when the error is provoked. A documented error no case here provokes fails too.
 */
describe('the OpenAPI document against the answers sent', () => {
  let db: TestDatabase;
  /** Publishing needs a token and is limited to 3 a window; one listener at most. */
  let app: TestApp;
  /** Its database unreachable. */
  let noDatabase: TestApp;
  /** Its Redis unreachable. */
  let noRedis: TestApp;
  /** ADMIN_TOKEN unset: administration off. */
  let noAdmin: TestApp;
  let limited: TestApp;
  const answers = new Map<string, HttpResult>();

  beforeAll(async () => {
    db = await TestDatabase.create();
    app = await startApp({
      ...redisEnv(db.url),
      PUBLISH_TOKEN: TOKEN,
      PUBLISH_RATE_LIMIT: '3',
      SSE_MAX_LISTENERS: '1',
      ADMIN_TOKEN,
      SEARCH_RATE_LIMIT: '2',
    });
    noDatabase = await startApp({
      DATABASE_URL: 'postgres://postgres@127.0.0.1:1/test',
      ADMIN_TOKEN,
    });
    noRedis = await startApp({
      DATABASE_URL: db.url,
      REDIS_URL: 'redis://127.0.0.1:1',
      ADMIN_TOKEN,
    });
    noAdmin = await startApp({ DATABASE_URL: db.url });
    limited = await startApp({
      DATABASE_URL: db.url,
      SSE_MAX_LISTENERS_PER_ADDRESS: '1',
      HISTORY_LONG_READS: '1',
      HISTORY_LONG_READS_QUEUE: '0',
    });

    const publish = (body: unknown, headers: Record<string, string> = {}) =>
      http(`${app.url}/api/webhooks/prevnames`, { method: 'POST', json: body, headers });
    const bearer = { authorization: `Bearer ${TOKEN}` };
    // In this order: the rate limit counts every publish that reaches it (not 413 and 415).
    answers.set('publishNameChange 401', await publish(event()));
    answers.set('publishNameChange 400', await publish(event({ userId: 'x'.repeat(65) }), bearer));
    answers.set('publishNameChange 500', await publish(event(), bearer));
    answers.set('publishNameChange 429', await publish(event(), bearer));
    answers.set(
      'publishNameChange 413',
      await publish(event({ name: 'x'.repeat(20_000) }), bearer),
    );
    answers.set(
      'publishNameChange 415',
      await http(`${app.url}/api/webhooks/prevnames`, {
        method: 'POST',
        headers: { ...bearer, 'content-type': 'text/plain' },
        body: JSON.stringify(event()),
      }),
    );
    // An empty user id is an id of the wrong length, as the document says.
    answers.set('getNameHistory 400', await http(`${app.url}/api/users//prevnames`));
    answers.set('getNameHistory 500', await http(`${noDatabase.url}/api/users/1/prevnames`));
    answers.set(
      'listen 400',
      await http(`${app.url}/api/webhooks/prevnames/listen?userId=${'x'.repeat(65)}`),
    );
    answers.set('listen 500', await http(`${noRedis.url}/api/webhooks/prevnames/listen`));
    const listener = await SseStream.open(`${app.url}/api/webhooks/prevnames/listen`);
    answers.set('listen 503', await http(`${app.url}/api/webhooks/prevnames/listen`));
    listener.close();
    const fromThisAddress = await SseStream.open(`${limited.url}/api/webhooks/prevnames/listen`);
    answers.set('listen 429', await http(`${limited.url}/api/webhooks/prevnames/listen`));
    fromThisAddress.close();
    // A long history read by many at once: one at a time reads it, the others are told to
    // come back (tried again until some are: how the reads interleave is the machine's).
    await db.query(
      `INSERT INTO name_change_events (user_id, type, name, changed_at)
       SELECT 'long-history', 'username', 'n' || g, timestamptz '2024-01-01Z' + g * interval '1 s'
         FROM generate_series(1, 1500) g`,
    );
    for (let round = 0; round < 20 && !answers.has('getNameHistory 503'); round++) {
      const reads = await Promise.all(
        Array.from({ length: 20 }, () => http(`${limited.url}/api/users/long-history/prevnames`)),
      );
      const busy = reads.find((read) => read.status === 503);
      if (busy) answers.set('getNameHistory 503', busy);
    }
    for (const [operationId, path] of [
      ['getLiveness', '/api/health/live'],
      ['getReadiness', '/api/health/ready'],
      ['getMetrics', '/api/metrics'],
    ]) {
      answers.set(`${operationId} 400`, await http(`${app.url}${path}?x=1`));
    }
    answers.set('getReadiness 503', await http(`${noDatabase.url}/api/health/ready`));

    const user = '123456789012345678';
    for (const [operationId, method, route] of ADMINISTRATION) {
      const at = (base: TestApp, userId = user) => `${base.url}/api/users/${userId}/${route}`;
      answers.set(
        `${operationId} 400`,
        await http(at(app, 'x'.repeat(65)), { method, headers: ADMIN }),
      );
      answers.set(`${operationId} 401`, await http(at(app), { method }));
      answers.set(`${operationId} 404`, await http(at(noAdmin), { method, headers: ADMIN }));
      answers.set(`${operationId} 500`, await http(at(noDatabase), { method, headers: ADMIN }));
    }
    // The webhook-endpoint routes: their 400s, 401s, 404s and 500s.
    const endpoints = (base: TestApp, path = '', init: RequestInit & { json?: unknown } = {}) =>
      http(`${base.url}/api/webhook-endpoints${path}`, { headers: ADMIN, ...init });
    const publicTarget = { url: 'http://93.184.216.14/hook' };
    answers.set(
      'createEndpoint 400',
      await endpoints(app, '', { method: 'POST', json: { url: 'http://127.0.0.1/' } }),
    );
    answers.set(
      'createEndpoint 401',
      await endpoints(app, '', { method: 'POST', json: publicTarget, headers: {} }),
    );
    answers.set(
      'createEndpoint 404',
      await endpoints(noAdmin, '', { method: 'POST', json: publicTarget }),
    );
    answers.set(
      'createEndpoint 500',
      await endpoints(noDatabase, '', { method: 'POST', json: publicTarget }),
    );
    for (const [operationId, method, path] of [
      ['listEndpoints', 'GET', ''],
      ['getEndpoint', 'GET', '/42'],
      ['deleteEndpoint', 'DELETE', '/42'],
    ] as const) {
      answers.set(`${operationId} 400`, await endpoints(app, `${path}?x=1`, { method }));
      answers.set(`${operationId} 401`, await endpoints(app, path, { method, headers: {} }));
      answers.set(`${operationId} 500`, await endpoints(noDatabase, path, { method }));
      // An unknown endpoint's 404 where there is an id; the administration's off otherwise.
      answers.set(`${operationId} 404`, await endpoints(path ? app : noAdmin, path, { method }));
    }
    // The search: on with ADMIN_TOKEN; 2 searches a window, the 400 counted.
    const search = (base: TestApp, query: string, headers: Record<string, string> = ADMIN) =>
      http(`${base.url}/api/prevnames${query}`, { headers });
    answers.set('searchPreviousNames 401', await search(app, '?name=old_name', {}));
    answers.set('searchPreviousNames 400', await search(app, ''));
    expect((await search(app, '?name=old_name')).status).toBe(200);
    answers.set('searchPreviousNames 429', await search(app, '?name=old_name'));
    answers.set('searchPreviousNames 404', await search(noAdmin, '?name=old_name'));
    answers.set('searchPreviousNames 500', await search(noDatabase, '?name=old_name'));
    // Stored and checked without Redis: the opt-out is refused before any broadcast.
    const optedOut = await http(`${noRedis.url}/api/users/opted-out/opt-out`, {
      method: 'PUT',
      headers: ADMIN,
    });
    expect(optedOut.status).toBe(200);
    answers.set(
      'publishNameChange 403',
      await http(`${noRedis.url}/api/webhooks/prevnames`, {
        method: 'POST',
        json: event({ userId: 'opted-out' }),
      }),
    );
  });

  afterAll(async () => {
    await Promise.all([
      app.close(),
      noDatabase.close(),
      noRedis.close(),
      noAdmin.close(),
      limited.close(),
    ]);
    await db.drop();
  });

  it('provokes every error the document shows', () => {
    expect(examples.map((e) => `${e.operationId} ${e.status}`).sort()).toEqual(
      [...answers.keys()].sort(),
    );
  });

  it.each(examples.map((e) => [`${e.method.toUpperCase()} ${e.path} → ${e.status}`, e] as const))(
    '%s: the example is the body sent',
    (_name, { operationId, status, example }) => {
      const res = answers.get(`${operationId} ${status}`)!;
      expect(res.status).toBe(Number(status));
      expect(res.headers.get('content-type')).toBe('application/json; charset=utf-8');
      expect(res.body).toEqual(example);
    },
  );

  it('says in the 413 exactly what is sent', () => {
    const res = answers.get('publishNameChange 413')!;
    expect(res.body).toEqual({ message: 'Request body exceeds the 16 KiB limit', code: 413 });
  });

  it('lists the 400 an empty user id gets on history', () => {
    const res = answers.get('getNameHistory 400')!;
    expect(res.body).toEqual({
      message: 'userId must be between 1 and 64 characters long',
      code: 400,
    });
  });
});
