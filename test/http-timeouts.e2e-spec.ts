import { PUBLISH } from './support/api.js';
import { useApp } from './support/app.js';
import { answer, head, HISTORY, nodeRefusal } from './support/http-answers.js';
import { rawExchange } from './support/raw-http.js';

const event = JSON.stringify({
  userId: 'http-layer',
  type: 'username',
  name: 'continued',
  changedAt: '2024-06-07T15:30:00.000Z',
});

/** A head or a body that does not arrive in time: Node's bare 408, nothing stored. */
describe('answers of the HTTP layer: timeouts', () => {
  // Short timeouts, so that the 408s come quickly; the defaults are 10 s and 30 s.
  const fx = useApp({ env: { HTTP_HEADERS_TIMEOUT_MS: '500', HTTP_REQUEST_TIMEOUT_MS: '1000' } });

  const rowCount = async () =>
    (await fx.db.query<{ n: number }>('SELECT count(*)::int AS n FROM name_change_events'))[0].n;

  it('answers 408 to a head that never ends', async () => {
    const raw = await rawExchange(fx.port, [{ send: head(`GET ${HISTORY} HTTP/1.1`) }]);
    expect(raw).toBe(nodeRefusal(408));
  });

  it('answers 408 to a body that never ends', async () => {
    const before = await rowCount();
    const raw = await rawExchange(fx.port, [
      {
        send: head(
          `POST ${PUBLISH} HTTP/1.1`,
          `Content-Type: application/json\r\nContent-Length: ${event.length}\r\n\r\n${event.slice(0, 10)}`,
        ),
      },
    ]);
    expect(raw).toBe(nodeRefusal(408));
    expect(await rowCount()).toBe(before);
  });

  it('answers 408 to the second request of a kept-alive connection, after the first answer', async () => {
    const raw = await rawExchange(fx.port, [
      { send: head(`GET ${HISTORY} HTTP/1.1`, '\r\n') + head(`GET ${HISTORY} HTTP/1.1`) },
    ]);
    const second = raw.indexOf('HTTP/1.1 408');
    expect(answer(raw.slice(0, second))).toMatchObject({
      status: 200,
      body: '{"userId":"1","prevnames":[],"code":200}',
    });
    expect(raw.slice(second)).toBe(nodeRefusal(408));
  });
});
