import { assertDocumented } from './openapi-contract.js';

/**
 * A small fetch wrapper: status, headers and the parsed (or raw) body of a response, which
 * must agree with the OpenAPI document.
 */
export interface HttpResult<T = unknown> {
  status: number;
  headers: Headers;
  body: T;
  text: string;
}

export async function http<T = unknown>(
  url: string,
  init: RequestInit & { json?: unknown } = {},
): Promise<HttpResult<T>> {
  const { json, ...rest } = init;
  const headers = new Headers(rest.headers);
  if (json !== undefined && !headers.has('content-type'))
    headers.set('content-type', 'application/json');
  const response = await fetch(url, {
    ...rest,
    headers,
    body: json !== undefined ? JSON.stringify(json) : rest.body,
  });
  const text = await response.text();
  let body: unknown = text;
  try {
    body = JSON.parse(text);
  } catch {
    // not JSON: keep the text
  }
  assertDocumented({
    method: init.method ?? 'GET',
    url,
    status: response.status,
    contentType: response.headers.get('content-type'),
    body,
  });
  return { status: response.status, headers: response.headers, body: body as T, text };
}

export function post(url: string, json: unknown, headers: Record<string, string> = {}) {
  return http(url, { method: 'POST', json, headers });
}
