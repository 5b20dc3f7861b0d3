import { PUBLISHED } from './api.js';
import { useApp, type Backend } from './app.js';
import { uniqueUserId, type NameEventBody } from './events.js';
import { http, type HttpResult } from './http.js';

/** The privacy administration, as the tests call it: ADMIN_TOKEN and its answers. */

export const ADMIN_TOKEN = 'an-admin-token-for-the-privacy-tests';
export const ADMIN_AUTH = { authorization: `Bearer ${ADMIN_TOKEN}` };

export const OPTED_OUT = {
  message: 'The user has opted out: their names are not recorded',
  code: 403,
};
export const UNAUTHORIZED = { message: 'Missing or invalid bearer token', code: 401 };

export interface ErasureBody {
  userId: string;
  deleted: number;
  code: 200;
}

export interface OptOutBody {
  userId: string;
  optedOut: boolean;
  code: 200;
}

/** `method` on `/api/users/<path>` of `baseUrl`, with the admin token unless `headers` say. */
export function admin<T = ErasureBody | OptOutBody>(
  baseUrl: string,
  method: string,
  path: string,
  headers: Record<string, string> = ADMIN_AUTH,
): Promise<HttpResult<T>> {
  return http<T>(`${baseUrl}/api/users/${path}`, { method, headers });
}

/**
 * The application of a describe block with ADMIN_TOKEN set, on `backend`, and the ways its
 * privacy tests speak to it. Someone listens throughout each test (a stream opened before
 * it), so that a publish is stored and answered 200. Call in the describe block.
 */
export function usePrivacyApp(backend: Backend) {
  const fx = useApp({ backend, env: { ADMIN_TOKEN } });
  /** A stream that has its opening (the id it starts from). */
  const listen = async (query = '', headers: Record<string, string> = {}) => {
    const stream = await fx.listen(query, headers);
    expect(stream.status).toBe(200);
    await stream.until((s) => s.messages.length > 0);
    return stream;
  };

  beforeEach(async () => {
    await listen(`?userId=${uniqueUserId('listener')}`);
  });

  return {
    fx,
    listen,
    /** `method` on `/api/users/<path>`, with the admin token unless `headers` say. */
    admin: (method: string, path: string, headers?: Record<string, string>) =>
      admin(fx.url, method, path, headers),
    /** POSTs, expecting it delivered (to the listener each test opens first). */
    publish: async (body: NameEventBody) => {
      const res = await fx.publish(body);
      expect(res.body).toEqual(PUBLISHED);
      return res;
    },
    historyOf: async (userId: string) => (await fx.history(userId)).body.prevnames,
  };
}
