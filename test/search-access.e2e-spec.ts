import { useApp } from './support/app.js';
import { nameEvent } from './support/events.js';
import { http } from './support/http.js';
import {
  SEARCH,
  SEARCH_AUTH,
  SEARCH_TOKEN,
  searchQuery,
  UNAUTHORIZED,
  useSearchApp,
} from './support/search.js';

const ADMIN_TOKEN = 'an-admin-token-for-the-search-tests';
const ADMIN_AUTH = { authorization: `Bearer ${ADMIN_TOKEN}` };
const JSON_TYPE = 'application/json; charset=utf-8';
const LIMIT = 'limit must be an integer between 1 and 1000';
const NAME_LENGTH = 'name must be between 1 and 256 characters long';

describe('the name search: who may search, and what a search may ask', () => {
  const { search, seed } = useSearchApp({ env: { ADMIN_TOKEN } });

  it('answers 401 without the search or admin token', async () => {
    const refused: Record<string, string>[] = [
      {},
      { authorization: 'Bearer not-the-search-token-at-all' },
      { authorization: SEARCH_TOKEN },
      { authorization: `Basic ${SEARCH_TOKEN}` },
      { authorization: `Bearer ${SEARCH_TOKEN}x` },
    ];
    for (const headers of refused) {
      const res = await search('?name=anyone', headers);
      expect(res.status).toBe(401);
      expect(res.headers.get('content-type')).toBe(JSON_TYPE);
      expect(res.body).toEqual(UNAUTHORIZED);
    }
  });

  it('takes SEARCH_TOKEN and ADMIN_TOKEN alike', async () => {
    const event = nameEvent({ name: 'Tokened' });
    await seed(event);
    const expected = { name: 'tokened', matches: [event], code: 200 };
    expect((await search('?name=tokened', SEARCH_AUTH)).body).toEqual(expected);
    expect((await search('?name=tokened', ADMIN_AUTH)).body).toEqual(expected);
    expect(
      (await search('?name=tokened', { authorization: `bearer ${SEARCH_TOKEN}` })).status,
    ).toBe(200);
  });

  it.each([
    ['no name', '', 'name is required'],
    ['an empty name', '?name=', NAME_LENGTH],
    ['a name of 257 characters', searchQuery({ name: '😀'.repeat(257) }), NAME_LENGTH],
    [
      'a name with NUL',
      '?name=a%00b',
      'name must not contain NUL characters or unpaired surrogates',
    ],
    ['a repeated name', '?name=a&name=b', 'name must be given once'],
    ['an unknown key', '?name=a&nme=b', 'property nme should not exist'],
    ['a key in another case', '?name=a&Name=b', 'property Name should not exist'],
    ['a bad type', '?name=a&type=nickname', 'type must be one of: username, displayname'],
    ['an empty type', '?name=a&type=', 'type must be one of: username, displayname'],
    ['a repeated type', '?name=a&type=username&type=username', 'type must be given once'],
    ['a bad match', '?name=ab&match=suffix', 'match must be one of: exact, prefix'],
    ['a repeated match', '?name=ab&match=exact&match=prefix', 'match must be given once'],
    [
      'a prefix of one character',
      '?name=a&match=prefix',
      'name must be at least 2 characters long with match=prefix',
    ],
    [
      'a prefix of one emoji',
      `?name=${encodeURIComponent('😀')}&match=prefix`,
      'name must be at least 2 characters long with match=prefix',
    ],
    ['limit 0', '?name=a&limit=0', LIMIT],
    ['limit 1001', '?name=a&limit=1001', LIMIT],
    ['limit 1.5', '?name=a&limit=1.5', LIMIT],
    ['limit 1e2', '?name=a&limit=1e2', LIMIT],
    ['an empty limit', '?name=a&limit=', LIMIT],
    ['a repeated limit', '?name=a&limit=1&limit=1', 'limit must be given once'],
    ['a repeated cursor', '?name=a&cursor=x&cursor=x', 'cursor must be given once'],
  ])('answers 400 to %s, naming what is wrong', async (_, query, message) => {
    const res = await search(query);
    expect(res.status).toBe(400);
    expect(res.headers.get('content-type')).toBe(JSON_TYPE);
    expect(res.body).toEqual({ message: expect.stringContaining(message) as unknown, code: 400 });
    if (query.includes('limit=0') || query.includes('match=prefix')) {
      expect(res.body).toEqual({ message, code: 400 });
    }
  });

  it('takes the edges of each parameter', async () => {
    const longest = '😀'.repeat(256);
    await seed(nameEvent({ name: longest }));
    expect((await search(searchQuery({ name: longest }))).body.matches).toHaveLength(1);
    for (const query of ['limit=1', 'limit=1000', 'match=exact', 'type=username']) {
      expect((await search(`?name=x&${query}`)).status).toBe(200);
    }
    expect((await search('?name=ab&match=prefix')).status).toBe(200);
  });
});

describe('the name search, rate limited per token', () => {
  const fx = useApp({
    env: { SEARCH_TOKEN, ADMIN_TOKEN, SEARCH_RATE_LIMIT: '2', SEARCH_RATE_WINDOW_MS: '60000' },
  });
  const search = (headers: Record<string, string>) =>
    http(`${fx.url}${SEARCH}?name=limited`, { headers });

  it('answers 429 past the budget of a token, each token counted apart', async () => {
    expect((await search(SEARCH_AUTH)).status).toBe(200);
    const second = await search(SEARCH_AUTH);
    expect(second.status).toBe(200);
    expect(second.headers.get('x-ratelimit-remaining')).toBe('0');
    const refused = await search(SEARCH_AUTH);
    expect(refused.status).toBe(429);
    expect(refused.body).toEqual({
      message: 'Too many requests: the search rate limit is exceeded',
      code: 429,
    });
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
    expect((await search(ADMIN_AUTH)).status).toBe(200);
    // A request without a token is refused as such, not counted.
    expect((await search({})).status).toBe(401);
    // The history is not limited.
    expect((await http(`${fx.url}/api/users/someone/prevnames`)).status).toBe(200);
  });
});

describe('the name search with neither SEARCH_TOKEN nor ADMIN_TOKEN set', () => {
  const fx = useApp();

  it('answers 404 as an unknown route, whatever is sent', async () => {
    for (const [query, headers] of [
      ['?name=a', SEARCH_AUTH],
      ['', {}],
      ['?nme=a&limit=0', {}],
    ] as const) {
      const res = await http(`${fx.url}${SEARCH}${query}`, { headers });
      expect(res.status).toBe(404);
      expect(res.headers.get('content-type')).toBe(JSON_TYPE);
      expect(res.body).toEqual({ message: `Cannot GET ${SEARCH}${query}`, code: 404 });
    }
    const unknown = await http(`${fx.url}/api/no-such-route?name=a`);
    expect(unknown.body).toEqual({ message: 'Cannot GET /api/no-such-route?name=a', code: 404 });
  });
});
