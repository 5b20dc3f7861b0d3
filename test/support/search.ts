import { useApp, type AppFixtureOptions } from './app.js';
import { uniqueUserId, type NameEventBody } from './events.js';
import { http, type HttpResult } from './http.js';

/** The name search, as the tests call it: its token, its route and its answers. */

export const SEARCH_TOKEN = 'a-search-token-for-the-search-tests';
export const SEARCH_AUTH = { authorization: `Bearer ${SEARCH_TOKEN}` };
export const SEARCH = '/api/prevnames';
export const UNAUTHORIZED = { message: 'Missing or invalid bearer token', code: 401 };

export interface SearchMatch {
  userId: string;
  type: 'username' | 'displayname';
  name: string;
  changedAt: string;
}

export interface SearchBody {
  name: string;
  matches: SearchMatch[];
  code: 200;
}

/** `?name=…&…` from parameters, as a client encodes them (a space as `+`). */
export function searchQuery(params: Record<string, string | number>): string {
  const query = new URLSearchParams();
  for (const [key, value] of Object.entries(params)) query.set(key, String(value));
  return `?${query.toString()}`;
}

/** A match as the search answers it: the stored event, its time in UTC. */
export function matchOf(body: NameEventBody): SearchMatch {
  return { ...body, changedAt: new Date(body.changedAt).toISOString() };
}

/** The next page's target in a Link header, or undefined at the last page. */
export function nextLink(result: HttpResult): string | undefined {
  const link = result.headers.get('link');
  if (link === null) return undefined;
  const match = /^<([^>]+)>; rel="next"$/.exec(link);
  if (!match) throw new Error(`Not a next link: ${link}`);
  return match[1];
}

/**
 * The application of a describe block with SEARCH_TOKEN set (no search rate limit unless
 * `env` sets one), and the ways its tests search and seed. Someone listens throughout each
 * test, so that a publish is stored and answered 200. Call in the describe block.
 */
export function useSearchApp(options: AppFixtureOptions = {}) {
  const fx = useApp({
    ...options,
    env: { SEARCH_TOKEN, SEARCH_RATE_LIMIT: '0', ...(options.env as Record<string, string>) },
  });

  beforeEach(async () => {
    const stream = await fx.listen(`?userId=${uniqueUserId('listener')}`);
    expect(stream.status).toBe(200);
    await stream.until((s) => s.messages.length > 0);
  });

  /** GET the search with a query string (`?…`), with the search token unless `headers` say. */
  const search = (query: string, headers: Record<string, string> = SEARCH_AUTH) =>
    http<SearchBody>(`${fx.url}${SEARCH}${query}`, { headers });

  /** Publishes each event in turn, each answered 200: stored in this order. */
  const seed = async (...events: NameEventBody[]) => {
    for (const event of events) expect((await fx.publish(event)).status).toBe(200);
  };

  /** Follows `next` links from `query` to the end: every page's matches, in order. */
  const walk = async (query: string, limits: number[] = []) => {
    const pages: SearchMatch[][] = [];
    let target: string | undefined = `${SEARCH}${query}`;
    while (target !== undefined) {
      const limit = limits[pages.length];
      const url = new URL(target, fx.url);
      if (limit !== undefined) url.searchParams.set('limit', String(limit));
      const page = await http<SearchBody>(url.toString(), { headers: SEARCH_AUTH });
      expect(page.status).toBe(200);
      pages.push(page.body.matches);
      target = nextLink(page);
    }
    return pages;
  };

  return { fx, search, seed, walk };
}
