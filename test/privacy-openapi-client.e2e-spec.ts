import createClient from 'openapi-fetch';
import type { components, paths } from './generated/openapi.js';
import { redisEnv, startApp, type TestApp } from './support/app.js';
import { TestDatabase } from './support/database.js';
import { SseStream } from './support/sse.js';

type ErasureResponse = components['schemas']['ErasureResponseDto'];
type OptOutResponse = components['schemas']['OptOutResponseDto'];
type ErrorResponse = components['schemas']['ErrorResponseDto'];

const TOKEN = 'an-admin-token-for-the-generated-client';

/** The privacy administration through the client generated from the committed document. */
describe('a generated client on the privacy routes', () => {
  let db: TestDatabase;
  let app: TestApp;
  let client: ReturnType<typeof createClient<paths>>;
  let anonymous: ReturnType<typeof createClient<paths>>;

  beforeAll(async () => {
    db = await TestDatabase.create();
    app = await startApp({ ...redisEnv(db.url), ADMIN_TOKEN: TOKEN });
    client = createClient<paths>({
      baseUrl: app.url,
      headers: { Authorization: `Bearer ${TOKEN}` },
    });
    anonymous = createClient<paths>({ baseUrl: app.url });
  });

  afterAll(async () => {
    await app.close();
    await db.drop();
  });

  const user = { params: { path: { userId: 'client-user' } } };

  it('erases, opts out, reads the state and opts back in, typed', async () => {
    const keeper = await SseStream.open(`${app.url}/api/webhooks/prevnames/listen?userId=nobody`);
    const published = await client.POST('/api/webhooks/prevnames', {
      body: {
        userId: 'client-user',
        type: 'username',
        name: 'typed',
        changedAt: '2025-01-01T00:00:00.000Z',
      },
    });
    keeper.close();
    expect(published.response.status).toBe(200);

    const erased = await client.DELETE('/api/users/{userId}/prevnames', user);
    const expectedErasure: ErasureResponse = { userId: 'client-user', deleted: 1, code: 200 };
    expect(erased.response.status).toBe(200);
    expect(erased.data).toEqual(expectedErasure);

    const optedOut: OptOutResponse = { userId: 'client-user', optedOut: true, code: 200 };
    const optedIn: OptOutResponse = { userId: 'client-user', optedOut: false, code: 200 };
    expect((await client.PUT('/api/users/{userId}/opt-out', user)).data).toEqual(optedOut);
    expect((await client.GET('/api/users/{userId}/opt-out', user)).data).toEqual(optedOut);
    const refused = await client.POST('/api/webhooks/prevnames', {
      body: {
        userId: 'client-user',
        type: 'username',
        name: 'refused',
        changedAt: '2025-01-01T00:00:00.000Z',
      },
    });
    const forbidden: ErrorResponse = {
      message: 'The user has opted out: their names are not recorded',
      code: 403,
    };
    expect(refused.response.status).toBe(403);
    expect(refused.error).toEqual(forbidden);
    expect((await client.DELETE('/api/users/{userId}/opt-out', user)).data).toEqual(optedIn);
    expect((await client.GET('/api/users/{userId}/opt-out', user)).data).toEqual(optedIn);
  });

  it('gets the typed 401 without the token', async () => {
    const { data, error, response } = await anonymous.GET('/api/users/{userId}/opt-out', user);
    expect(response.status).toBe(401);
    expect(data).toBeUndefined();
    const expected: ErrorResponse = { message: 'Missing or invalid bearer token', code: 401 };
    expect(error).toEqual(expected);
  });
});
