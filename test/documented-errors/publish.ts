import { ADMIN } from '../support/documented-errors.js';
import type { DocumentedErrorCases } from '../support/documented-errors.js';
import { http } from '../support/http.js';
import { documentedEvent as event } from '../support/openapi-document.js';

const TOKEN = 'a-publish-token-for-the-document-test';

export default {
  async provoke({ noRedis, start }) {
    // Publishing needs a token and is limited to 3 a window; no listener, the spec's 500.
    const app = await start({ PUBLISH_TOKEN: TOKEN, PUBLISH_RATE_LIMIT: '3' });
    const publish = (body: unknown, headers: Record<string, string> = {}) =>
      http(`${app.url}/api/webhooks/prevnames`, { method: 'POST', json: body, headers });
    const bearer = { authorization: `Bearer ${TOKEN}` };
    // In this order: the rate limit counts every publish that reaches it (not 413 and 415).
    const answers: [string, Awaited<ReturnType<typeof http>>][] = [
      ['publishNameChange 401', await publish(event())],
      ['publishNameChange 400', await publish(event({ userId: 'x'.repeat(65) }), bearer)],
      ['publishNameChange 500', await publish(event(), bearer)],
      ['publishNameChange 429', await publish(event(), bearer)],
      ['publishNameChange 413', await publish(event({ name: 'x'.repeat(20_000) }), bearer)],
      [
        'publishNameChange 415',
        await http(`${app.url}/api/webhooks/prevnames`, {
          method: 'POST',
          headers: { ...bearer, 'content-type': 'text/plain' },
          body: JSON.stringify(event()),
        }),
      ],
    ];
    // Stored and checked without Redis: the opt-out is refused before any broadcast.
    const optedOut = await http(`${noRedis.url}/api/users/opted-out/opt-out`, {
      method: 'PUT',
      headers: ADMIN,
    });
    if (optedOut.status !== 200) throw new Error(`opt-out answered ${optedOut.status}`);
    answers.push([
      'publishNameChange 403',
      await http(`${noRedis.url}/api/webhooks/prevnames`, {
        method: 'POST',
        json: event({ userId: 'opted-out' }),
      }),
    ]);
    return answers;
  },
} satisfies DocumentedErrorCases;
