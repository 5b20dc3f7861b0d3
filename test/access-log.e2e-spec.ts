import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { LISTEN, PUBLISH } from './support/api.js';
import { http } from './support/http.js';
import { waitFor } from './support/ports.js';
import { logLines } from './support/logs.js';
import { ServiceProcess, START_TIMEOUT_MS } from './support/service-process.js';
import { SseStream } from './support/sse.js';

/** The access log line of the request with this X-Request-Id, once written. */
const accessLine = (service: ServiceProcess, id: string) =>
  waitFor(`the access log line of ${id}`, () =>
    logLines(service).find((line) => line.req?.id === id),
  );

const event = JSON.stringify({
  userId: 'logged',
  type: 'username',
  name: 'n',
  changedAt: '2024-06-07T15:30:00.000Z',
});

/**
 * The access log covers every request the application answers, those refused before any
 * route is chosen included, but the routes that declare otherwise: the probes and the stream.
 */
describe('the access log', () => {
  let dataDir: string;
  let service: ServiceProcess;

  beforeAll(async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'access-log-e2e-'));
    service = await ServiceProcess.start({ DATA_DIR: dataDir, LOG_LEVEL: 'info' });
  }, START_TIMEOUT_MS + 10_000);

  afterAll(async () => {
    await service?.stop('SIGKILL');
    await rm(dataDir, { recursive: true, force: true });
  });

  const json = { 'content-type': 'application/json' };

  const HISTORY = '/api/users/{:userId}/prevnames';

  // The query string is never logged (a search's name and cursor, a history's cursor are in
  // it): `req.url` is the path, `route` the template of the route that took the request, or
  // null when none did (refused before routing, or an unknown path).
  it.each([
    ['a history read', 'GET', '/api/users/someone/prevnames', {}, undefined, 200, HISTORY],
    [
      'a history page',
      'GET',
      '/api/users/someone/prevnames?limit=1&after=2024-01-01T00:00:00Z',
      {},
      undefined,
      200,
      HISTORY,
    ],
    ['an unknown route under /api', 'GET', '/api/nowhere?name=x', {}, undefined, 404, null],
    ['an unknown path outside /api', 'GET', '/nowhere?name=x', {}, undefined, 404, null],
    ['a body that is not JSON', 'POST', PUBLISH, json, '{"userId":', 400, null],
    [
      'a body that is not declared JSON',
      'POST',
      PUBLISH,
      { 'content-type': 'text/plain' },
      event,
      415,
      null,
    ],
    ['a body over the limit', 'POST', PUBLISH, json, `{"name":"${'x'.repeat(20_000)}"}`, 413, null],
    [
      'a refused query key on a route',
      'GET',
      '/api/users/someone/prevnames?x=1',
      {},
      undefined,
      400,
      HISTORY,
    ],
  ])(
    'logs %s: one line with its id, method, path, route, address and status',
    async (_case, method, url, headers, body, status, route) => {
      const id = `logged-${status}-${method}-${url.length}`;
      const res = await http(`${service.url}${url}`, {
        method,
        headers: { ...headers, 'x-request-id': id },
        body,
      });
      expect(res.status).toBe(status);
      const line = await accessLine(service, id);
      expect(line).toEqual({
        level: 30,
        time: expect.any(Number) as unknown,
        pid: service.pid,
        hostname: expect.any(String) as unknown,
        // IPv4-mapped when the service listens on both families (its default, `::`).
        req: {
          id,
          method,
          url: url.split('?')[0],
          remoteAddress: expect.stringMatching(/^(::ffff:)?127\.0\.0\.1$/) as unknown,
        },
        route,
        res: { statusCode: status },
        responseTime: expect.any(Number) as unknown,
        msg: 'request completed',
      });
      expect(logLines(service).filter((l) => l.req?.id === id)).toHaveLength(1);
    },
  );

  it('logs no line for the probes nor for a stream, which logs its own open and close', async () => {
    const quiet = ['/api/health/live', '/api/health/ready', '/api/health/live/'];
    for (const [i, path] of quiet.entries()) {
      const res = await http(`${service.url}${path}`, {
        headers: { 'x-request-id': `probe-${i}` },
      });
      expect(res.status).toBe(200);
    }
    const stream = await SseStream.open(`${service.url}${LISTEN}`, { 'x-request-id': 'stream' });
    expect(stream.status).toBe(200);
    const streamLine = (msg: string) => () =>
      logLines(service).find((l) => l.msg === msg && (l.stream as { id?: string }).id === 'stream');
    await waitFor('the stream to be logged as opened', streamLine('stream opened'));
    stream.close();
    await waitFor('the stream to be logged as closed', streamLine('stream closed'));
    // A request after them all: once its line is in, theirs would be too.
    await http(`${service.url}/api/users/someone/prevnames`, {
      headers: { 'x-request-id': 'sentinel' },
    });
    await accessLine(service, 'sentinel');
    const ids = logLines(service).flatMap((l) => (l.req ? [l.req.id] : []));
    expect(ids.filter((id) => id.startsWith('probe-') || id === 'stream')).toEqual([]);
  });
});
