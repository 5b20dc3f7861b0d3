import { ADMIN, type DocumentedErrorCases } from '../support/documented-errors.js';
import type { TestApp } from '../support/app.js';
import { http } from '../support/http.js';

/** The administration routes: operation, method, path below /api/users/<id>/. */
const ADMINISTRATION = [
  ['eraseNameHistory', 'DELETE', 'prevnames'],
  ['optOut', 'PUT', 'opt-out'],
  ['optIn', 'DELETE', 'opt-out'],
  ['getOptOut', 'GET', 'opt-out'],
] as const;

export default {
  async provoke({ app, noAdmin, noDatabase }) {
    const user = '123456789012345678';
    const answers: [string, Awaited<ReturnType<typeof http>>][] = [];
    for (const [operationId, method, route] of ADMINISTRATION) {
      const at = (base: TestApp, userId = user) => `${base.url}/api/users/${userId}/${route}`;
      answers.push(
        [`${operationId} 400`, await http(at(app, 'x'.repeat(65)), { method, headers: ADMIN })],
        [`${operationId} 401`, await http(at(app), { method })],
        [`${operationId} 404`, await http(at(noAdmin), { method, headers: ADMIN })],
        [`${operationId} 500`, await http(at(noDatabase), { method, headers: ADMIN })],
      );
    }
    return answers;
  },
} satisfies DocumentedErrorCases;
