import { useApp } from './support/app.js';
import { head, HISTORY, nodeRefusal } from './support/http-answers.js';
import { rawRequest } from './support/raw-http.js';

/** The limits of a request head: 16 KiB and 2000 header fields, set explicitly (Node's bare 431 past them). */
describe('answers of the HTTP layer: limits of a request head', () => {
  const fx = useApp();

  /** A request with `count` header fields in all (Host and Connection included). */
  const withFields = (count: number) =>
    head(
      `GET ${HISTORY} HTTP/1.1`,
      Array.from({ length: count - 2 }, (_, i) => `X-F${i}: v\r\n`).join('') +
        'Connection: close\r\n\r\n',
    );

  it('answers a request with 2000 header fields normally', async () => {
    const res = await rawRequest(fx.port, withFields(2000));
    expect(res.status).toBe(200);
    expect(JSON.parse(res.body)).toEqual({ userId: '1', prevnames: [], code: 200 });
  });

  it('answers 431 to 2001 header fields, whatever their size', async () => {
    const res = await rawRequest(fx.port, withFields(2001));
    expect(res.raw.toString('latin1')).toBe(nodeRefusal(431));
  });

  it('answers a head of just under 16 KiB normally, and 431 past it', async () => {
    // Node counts the URL and each header's name and value against the limit.
    const counted = HISTORY.length + 'Host127.0.0.1X-FConnectionclose'.length;
    const filler = 16 * 1024 - counted - 64;
    const fits = await rawRequest(
      fx.port,
      head(`GET ${HISTORY} HTTP/1.1`, `X-F: ${'y'.repeat(filler)}\r\nConnection: close\r\n\r\n`),
    );
    expect(fits.status).toBe(200);
    const over = await rawRequest(
      fx.port,
      head(
        `GET ${HISTORY} HTTP/1.1`,
        `X-F: ${'y'.repeat(filler + 128)}\r\nConnection: close\r\n\r\n`,
      ),
    );
    expect(over.raw.toString('latin1')).toBe(nodeRefusal(431));
  });

  it('answers 431 to a URL past the limit', async () => {
    const res = await rawRequest(
      fx.port,
      head(`GET /api/users/${'x'.repeat(17_000)}/prevnames HTTP/1.1`, 'Connection: close\r\n\r\n'),
    );
    expect(res.raw.toString('latin1')).toBe(nodeRefusal(431));
  });
});
