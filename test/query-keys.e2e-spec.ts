import { redisEnv, startApp, type TestApp } from './support/app.js';
import { TestDatabase } from './support/database.js';
import { http } from './support/http.js';
import { exampleOperations } from './support/openapi-document.js';
import { SseStream } from './support/sse.js';

/** Every operation of the document, by its examples, and the documentation's own routes. */
const routes: [method: string, path: string, query: string, body?: object][] = [
  ...exampleOperations.map(
    ({ method, path, query, body }) =>
      [method, path, query ? `${query}&` : '', body] as [string, string, string, object?],
  ),
  ['GET', '/api/docs', ''],
  ['GET', '/api/docs-json', ''],
  ['GET', '/api/docs-yaml', ''],
];

/** Keys named after Object.prototype's members, which parsers and transformers treat apart. */
const PROTOTYPE_KEYS = ['prototype', ...Object.getOwnPropertyNames(Object.prototype)];
const OTHER_KEYS = ['foo', 'Limit', 'limit[]', 'user_id', 'a.b', ''];

const ADMIN_TOKEN = 'an-admin-token-for-the-query-key-test';
/** The administration routes exist with ADMIN_TOKEN set; a bearer token is no key. */
const headers = { authorization: `Bearer ${ADMIN_TOKEN}` };

/** Every route refuses every query key it does not take, naming it. */
describe('unknown query keys', () => {
  let db: TestDatabase;
  let app: TestApp;

  beforeAll(async () => {
    db = await TestDatabase.create();
    app = await startApp({ ...redisEnv(db.url), ADMIN_TOKEN });
  });

  afterAll(async () => {
    await app.close();
    await db.drop();
  });

  const request = (method: string, path: string, required: string, query: string, json?: object) =>
    http(`${app.url}${path}?${required}${query}`, { method, headers, json });

  it('makes a request of every operation from its examples', () => {
    expect(exampleOperations.filter(({ missing }) => missing.length)).toEqual([]);
    expect(exampleOperations.map(({ operation }) => operation.operationId)).toEqual(
      expect.arrayContaining(['getNameHistory', 'listen', 'publishNameChange']),
    );
  });

  describe.each(routes)('%s %s', (method, path, required, body) => {
    it.each([...PROTOTYPE_KEYS, ...OTHER_KEYS])(
      'refuses ?%s=1 with a 400 naming it',
      async (key) => {
        const res = await request(method, path, required, `${encodeURIComponent(key)}=1`, body);
        expect(res.status).toBe(400);
        expect(res.headers.get('content-type')).toBe('application/json; charset=utf-8');
        expect(res.body).toEqual({ message: `property ${key} should not exist`, code: 400 });
      },
    );

    it('refuses a key spelled with percent-escapes, and a key without a value', async () => {
      const escaped = await request(method, path, required, '%5F%5Fproto%5F%5F=1', body);
      expect(escaped.status).toBe(400);
      expect(escaped.body).toEqual({ message: 'property __proto__ should not exist', code: 400 });
      const bare = await request(method, path, required, 'toString', body);
      expect(bare.status).toBe(400);
      expect(bare.body).toEqual({ message: 'property toString should not exist', code: 400 });
    });
  });

  it('stored nothing from the refused publishes', async () => {
    expect(await db.query('SELECT * FROM name_change_events')).toEqual([]);
  });

  it('still takes the keys each route documents', async () => {
    const search = await http(`${app.url}/api/prevnames?name=n&type=username&limit=1`, {
      headers,
    });
    expect(search.status).toBe(200);
    expect(search.body).toEqual({ name: 'n', matches: [], code: 200 });
    const history = await http(`${app.url}/api/users/query-keys/prevnames?limit=1`);
    expect(history.status).toBe(200);
    expect(history.body).toEqual({ userId: 'query-keys', prevnames: [], code: 200 });
    const stream = await SseStream.open(
      `${app.url}/api/webhooks/prevnames/listen?userId=query-keys&lastEventId=0`,
    );
    stream.close();
    expect(stream.status).toBe(200);
  });
});
