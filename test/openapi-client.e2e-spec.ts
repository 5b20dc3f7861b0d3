import createClient from 'openapi-fetch';
import { readFileSync } from 'node:fs';
import type { components, paths } from './generated/openapi.js';
import { useApp } from './support/app.js';
import { http } from './support/http.js';

type NameChangeEvent = components['schemas']['NameChangeEventDto'];
type ErrorResponse = components['schemas']['ErrorResponseDto'];

/** The client users generate from the committed document (see README), against the real app. */
describe('a client generated from the OpenAPI document', () => {
  const fx = useApp();
  let client: ReturnType<typeof createClient<paths>>;

  beforeAll(() => {
    client = createClient<paths>({ baseUrl: fx.url });
  });

  it('publishes a typed event and reads it back from the history', async () => {
    const stream = await fx.listen();
    const event: NameChangeEvent = {
      userId: 'client-1',
      type: 'displayname',
      name: 'Typed 🦊',
      changedAt: '2024-06-07T15:30:00.000Z',
    };
    const published = await client.POST('/api/webhooks/prevnames', { body: event });
    expect(published.response.status).toBe(200);
    expect(published.data).toEqual({ success: true });
    await stream.untilEvents(1);

    const { data, error, response } = await client.GET('/api/users/{userId}/prevnames', {
      params: { path: { userId: 'client-1' }, query: { limit: 10 } },
    });
    expect(response.status).toBe(200);
    expect(error).toBeUndefined();
    expect(data).toEqual({
      userId: 'client-1',
      prevnames: [{ type: 'displayname', name: 'Typed 🦊', changedAt: '2024-06-07T15:30:00.000Z' }],
      code: 200,
    });
  });

  it('gets typed errors', async () => {
    const { data, error, response } = await client.GET('/api/users/{userId}/prevnames', {
      params: { path: { userId: 'x'.repeat(65) } },
    });
    expect(response.status).toBe(400);
    expect(data).toBeUndefined();
    const expected: ErrorResponse = {
      message: 'userId must be between 1 and 64 characters long',
      code: 400,
    };
    expect(error).toEqual(expected);

    await fx.untilNobodyListens();
    const nobody = await client.POST('/api/webhooks/prevnames', {
      body: {
        userId: 'client-2',
        type: 'username',
        name: 'alone',
        changedAt: '2024-06-07T15:30:00Z',
      },
    });
    expect(nobody.response.status).toBe(500);
    expect(nobody.error).toEqual({
      message: 'Failed to deliver event: no active listeners',
      code: 500,
    });
  });

  it('serves the committed document at /api/docs-json and Swagger UI at /api/docs', async () => {
    const committed = JSON.parse(readFileSync('openapi/openapi.json', 'utf8')) as unknown;
    const served = await http(`${fx.url}/api/docs-json`);
    expect(served.status).toBe(200);
    expect(served.body).toEqual(committed);
    const ui = await http(`${fx.url}/api/docs`);
    expect(ui.status).toBe(200);
    expect(ui.headers.get('content-type')).toBe('text/html; charset=utf-8');
    expect(ui.text).toContain('swagger-ui');
  });
});
