import { EventSource } from 'eventsource';
import { LISTEN, PUBLISH } from './support/api.js';
import { useApp } from './support/app.js';
import { nameEvent, uniqueUserId } from './support/events.js';
import { http } from './support/http.js';
import { failTestsOnProcessFailures } from './support/process-spies.js';

/** Names written to break the stream's framing reach every listener as names, nothing more. */
describe('hostile input: names that try to inject stream messages', () => {
  const fx = useApp();
  failTestsOnProcessFailures();

  /** POSTs `body` as is, as JSON. */
  const send = (body: string) =>
    http(`${fx.url}${PUBLISH}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body,
    });

  it('keeps SSE framing intact for names that try to inject messages, for a real EventSource too', async () => {
    const userId = uniqueUserId('framing');
    const names = [
      '\n\ndata: {"userId":"evil","type":"username","name":"x","changedAt":"2024-01-01T00:00:00.000Z"}\n\n',
      'id: 99999999\nretry: 1\n\n',
      '\r\rdata: injected\r\r',
      '\r\n\r\nevent: error\r\n\r\n',
      ': comment\n\n',
      'line\u2028separator\u2029paragraph\u0085next',
      '\ufeffdata: bom',
      '</script><img src=x onerror=alert(1)>',
    ];
    const sentinel = nameEvent({ userId, name: 'sentinel' });
    const source = new EventSource(`${fx.url}${LISTEN}?userId=${encodeURIComponent(userId)}`);
    const received: { data: string; lastEventId: string; type: string }[] = [];
    try {
      await new Promise<void>((resolve, reject) => {
        source.onopen = () => resolve();
        source.onerror = () => reject(new Error('EventSource failed to open'));
      });
      // Events reach a listener in id order: once the sentinel, sent last, is in, so is the rest.
      const sentinelReceived = new Promise<void>((resolve) => {
        source.onmessage = (m: MessageEvent) => {
          received.push({ data: m.data as string, lastEventId: m.lastEventId, type: m.type });
          if ((JSON.parse(m.data as string) as { name: string }).name === sentinel.name) resolve();
        };
      });
      for (const [i, name] of names.entries()) {
        const res = await send(
          JSON.stringify({
            userId,
            type: 'displayname',
            name,
            changedAt: `2024-02-0${i + 1}T00:00:00Z`,
          }),
        );
        expect(res.status).toBe(200);
      }
      expect((await send(JSON.stringify(sentinel))).status).toBe(200);
      await sentinelReceived;
      expect(received.map((m) => (JSON.parse(m.data) as { name: string }).name)).toEqual([
        ...names,
        sentinel.name,
      ]);
      expect(received.every((m) => m.type === 'message' && /^\d+$/.test(m.lastEventId))).toBe(true);
      expect(received.map((m) => (JSON.parse(m.data) as { userId: string }).userId)).toEqual(
        [...names, sentinel].map(() => userId),
      );
    } finally {
      source.close();
    }
  });
});
