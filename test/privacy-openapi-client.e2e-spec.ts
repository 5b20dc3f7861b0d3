import createClient from 'openapi-fetch';
import type { components, paths } from '../clients/typescript/openapi.js';
import { useApp } from './support/app.js';
import { uniqueUserId } from './support/events.js';
import { ADMIN_TOKEN, OPTED_OUT, UNAUTHORIZED } from './support/privacy.js';

type ErasureResponse = components['schemas']['ErasureResponseDto'];
type OptOutResponse = components['schemas']['OptOutResponseDto'];
type ErrorResponse = components['schemas']['ErrorResponseDto'];

/** The privacy administration through the client generated from the committed document. */
describe('a generated client on the privacy routes', () => {
  const fx = useApp({ env: { ADMIN_TOKEN } });
  let client: ReturnType<typeof createClient<paths>>;
  let anonymous: ReturnType<typeof createClient<paths>>;

  beforeAll(() => {
    client = createClient<paths>({
      baseUrl: fx.url,
      headers: { Authorization: `Bearer ${ADMIN_TOKEN}` },
    });
    anonymous = createClient<paths>({ baseUrl: fx.url });
  });

  it('erases, opts out, reads the state and opts back in, typed', async () => {
    const userId = uniqueUserId('client-user');
    const user = { params: { path: { userId } } };
    await fx.listen(`?userId=${uniqueUserId('listener')}`);
    const published = await client.POST('/api/webhooks/prevnames', {
      body: { userId, type: 'username', name: 'typed', changedAt: '2025-01-01T00:00:00.000Z' },
    });
    expect(published.response.status).toBe(200);

    const erased = await client.DELETE('/api/users/{userId}/prevnames', user);
    const expectedErasure: ErasureResponse = { userId, deleted: 1, code: 200 };
    expect(erased.response.status).toBe(200);
    expect(erased.data).toEqual(expectedErasure);

    const optedOut: OptOutResponse = { userId, optedOut: true, code: 200 };
    const optedIn: OptOutResponse = { userId, optedOut: false, code: 200 };
    expect((await client.PUT('/api/users/{userId}/opt-out', user)).data).toEqual(optedOut);
    expect((await client.GET('/api/users/{userId}/opt-out', user)).data).toEqual(optedOut);
    const refused = await client.POST('/api/webhooks/prevnames', {
      body: { userId, type: 'username', name: 'refused', changedAt: '2025-01-01T00:00:00.000Z' },
    });
    const forbidden: ErrorResponse = OPTED_OUT;
    expect(refused.response.status).toBe(403);
    expect(refused.error).toEqual(forbidden);
    expect((await client.DELETE('/api/users/{userId}/opt-out', user)).data).toEqual(optedIn);
    expect((await client.GET('/api/users/{userId}/opt-out', user)).data).toEqual(optedIn);
  });

  it('gets the typed 401 without the token', async () => {
    const user = { params: { path: { userId: uniqueUserId('client-user') } } };
    const { data, error, response } = await anonymous.GET('/api/users/{userId}/opt-out', user);
    expect(response.status).toBe(401);
    expect(data).toBeUndefined();
    const expected: ErrorResponse = UNAUTHORIZED;
    expect(error).toEqual(expected);
  });
});
