import { ADMIN, type DocumentedErrorCases } from '../support/documented-errors.js';
import type { TestApp } from '../support/app.js';
import { http } from '../support/http.js';

export default {
  async provoke({ app, noAdmin, noDatabase }) {
    const endpoints = (base: TestApp, path = '', init: RequestInit & { json?: unknown } = {}) =>
      http(`${base.url}/api/webhook-endpoints${path}`, { headers: ADMIN, ...init });
    const publicTarget = { url: 'http://93.184.216.14/hook' };
    const post = (json: unknown, headers?: Record<string, string>) =>
      ({ method: 'POST', json, ...(headers && { headers }) }) as const;
    const answers: [string, Awaited<ReturnType<typeof http>>][] = [
      ['createEndpoint 400', await endpoints(app, '', post({ url: 'http://127.0.0.1/' }))],
      ['createEndpoint 401', await endpoints(app, '', post(publicTarget, {}))],
      ['createEndpoint 404', await endpoints(noAdmin, '', post(publicTarget))],
      ['createEndpoint 500', await endpoints(noDatabase, '', post(publicTarget))],
    ];
    for (const [operationId, method, path] of [
      ['listEndpoints', 'GET', ''],
      ['getEndpoint', 'GET', '/42'],
      ['deleteEndpoint', 'DELETE', '/42'],
    ] as const) {
      answers.push(
        [`${operationId} 400`, await endpoints(app, `${path}?x=1`, { method })],
        [`${operationId} 401`, await endpoints(app, path, { method, headers: {} })],
        [`${operationId} 500`, await endpoints(noDatabase, path, { method })],
        // An unknown endpoint's 404 where there is an id; the administration's off otherwise.
        [`${operationId} 404`, await endpoints(path ? app : noAdmin, path, { method })],
      );
    }
    return answers;
  },
} satisfies DocumentedErrorCases;
