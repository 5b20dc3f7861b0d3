import createClient from 'openapi-fetch';
import type { components, paths } from '../clients/typescript/openapi.js';
import { nameEvent } from './support/events.js';
import { SEARCH_TOKEN, UNAUTHORIZED, useSearchApp } from './support/search.js';

type SearchResponse = components['schemas']['SearchResponseDto'];
type ErrorResponse = components['schemas']['ErrorResponseDto'];

/** The name search through the client generated from the committed document. */
describe('a generated client on the name search', () => {
  const { fx, seed } = useSearchApp();
  let client: ReturnType<typeof createClient<paths>>;
  let anonymous: ReturnType<typeof createClient<paths>>;

  beforeAll(() => {
    client = createClient<paths>({
      baseUrl: fx.url,
      headers: { Authorization: `Bearer ${SEARCH_TOKEN}` },
    });
    anonymous = createClient<paths>({ baseUrl: fx.url });
  });

  it('searches, typed, and follows the next page', async () => {
    const first = nameEvent({ name: 'Client Name', changedAt: '2025-01-01T00:00:00.000Z' });
    const second = nameEvent({ name: 'client name', type: 'displayname' });
    await seed(first, second);
    const page = await client.GET('/api/prevnames', {
      params: { query: { name: 'CLIENT NAME', limit: 1 } },
    });
    expect(page.response.status).toBe(200);
    const expected: SearchResponse = {
      name: 'CLIENT NAME',
      matches: [{ ...second, changedAt: new Date(second.changedAt).toISOString() }],
      code: 200,
    };
    expect(page.data).toEqual(expected);
    const link = page.response.headers.get('link')!;
    const cursor = new URL(/<([^>]+)>/.exec(link)![1], fx.url).searchParams.get('cursor')!;
    const next = await client.GET('/api/prevnames', {
      params: { query: { name: 'CLIENT NAME', match: 'exact', limit: 5, cursor } },
    });
    expect(next.data?.matches).toEqual([first]);
    expect(next.response.headers.get('link')).toBeNull();
    const typed = await client.GET('/api/prevnames', {
      params: { query: { name: 'client', match: 'prefix', type: 'username' } },
    });
    expect(typed.data?.matches).toEqual([first]);
  });

  it('gets the typed 400 and 401', async () => {
    const bad = await client.GET('/api/prevnames', {
      params: { query: { name: 'x', match: 'prefix' } },
    });
    expect(bad.response.status).toBe(400);
    const badRequest: ErrorResponse = {
      message: 'name must be at least 2 characters long with match=prefix',
      code: 400,
    };
    expect(bad.error).toEqual(badRequest);
    const refused = await anonymous.GET('/api/prevnames', { params: { query: { name: 'x' } } });
    expect(refused.response.status).toBe(401);
    expect(refused.data).toBeUndefined();
    const unauthorized: ErrorResponse = UNAUTHORIZED;
    expect(refused.error).toEqual(unauthorized);
  });
});
