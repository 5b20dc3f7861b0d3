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
