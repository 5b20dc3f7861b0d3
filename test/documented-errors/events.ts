import type { DocumentedErrorCases } from '../support/documented-errors.js';
import { http } from '../support/http.js';
import { SseStream } from '../support/sse.js';

export default {
  async provoke({ noRedis, start }) {
    const listen = '/api/webhooks/prevnames/listen';
    const app = await start({ SSE_MAX_LISTENERS: '1' });
    const answers: [string, Awaited<ReturnType<typeof http>>][] = [
      ['listen 400', await http(`${app.url}${listen}?userId=${'x'.repeat(65)}`)],
      ['listen 500', await http(`${noRedis.url}${listen}`)],
    ];
    const listener = await SseStream.open(`${app.url}${listen}`);
    answers.push(['listen 503', await http(`${app.url}${listen}`)]);
    listener.close();
    const limited = await start({ SSE_MAX_LISTENERS_PER_ADDRESS: '1' });
    const fromThisAddress = await SseStream.open(`${limited.url}${listen}`);
    answers.push(['listen 429', await http(`${limited.url}${listen}`)]);
    fromThisAddress.close();
    return answers;
  },
} satisfies DocumentedErrorCases;
