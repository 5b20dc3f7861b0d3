import { PUBLISH } from './support/api.js';
import { uniqueRedisPrefix } from './support/app.js';
import { TestDatabase } from './support/database.js';
import { REDIS_URL } from './support/environment.js';
import { KeepAliveClient } from './support/keep-alive-client.js';
import { COMPOSE_ENV, Nginx } from './support/nginx.js';
import { waitFor } from './support/ports.js';
import { ensureBuilt, ServiceProcess } from './support/service-process.js';

/**
 * What the shipped proxy (Debian's nginx running deploy/nginx.conf) does to requests, in
 * front of one instance (`node dist/main.js`) configured as docker-compose.yml configures it:
 * the client address it passes on, the metrics it hides, the errors it answers itself.
 */

const PROCESS_TIMEOUT_MS = 300_000;

describe('client addresses and metrics behind the shipped nginx', () => {
  let db: TestDatabase;
  let instance: ServiceProcess;
  let nginx: Nginx;
  const clients: KeepAliveClient[] = [];
  /** A client on its own loopback address, as a host on the network would be. */
  const from = (localAddress: string) => {
    const client = new KeepAliveClient(nginx.url, { localAddress });
    clients.push(client);
    return client;
  };
  const event = (name: string) => ({
    userId: `addresses-${name}`,
    type: 'username',
    name,
    changedAt: '2024-01-01T00:00:00.000Z',
  });

  beforeAll(async () => {
    ensureBuilt();
    db = await TestDatabase.create();
    instance = await ServiceProcess.start({
      ...COMPOSE_ENV,
      DATABASE_URL: db.url,
      REDIS_URL,
      REDIS_KEY_PREFIX: uniqueRedisPrefix(),
      PUBLISH_RATE_LIMIT: '2',
      LOG_LEVEL: 'info',
    });
    // Both upstream entries on the one instance.
    nginx = await Nginx.start([instance.port, instance.port]);
  }, PROCESS_TIMEOUT_MS);

  afterAll(async () => {
    for (const client of clients) client.close();
    await nginx?.stop();
    await instance?.stop('SIGKILL');
    await db?.drop();
  });

  it('keys the rate limit on the address nginx saw, whatever X-Forwarded-For a client sends', async () => {
    const forger = from('127.0.0.2');
    const statuses = [];
    for (const forged of ['203.0.113.7', '198.51.100.1', '192.0.2.99, 10.0.0.1']) {
      const answer = await forger.request('POST', PUBLISH, event(`forged-${statuses.length}`), {
        'X-Forwarded-For': forged,
      });
      statuses.push(answer.status);
    }
    // No listener anywhere: a POST within the limit is stored and answered 500.
    expect(statuses).toEqual([500, 500, 429]);
    // Another client has a bucket of its own.
    expect((await from('127.0.0.3').request('POST', PUBLISH, event('other'))).status).toBe(500);
  });

  it('logs the client address on the request line', async () => {
    const answer = await from('127.0.0.4').request(
      'GET',
      '/api/users/someone/prevnames',
      undefined,
      {
        'X-Forwarded-For': '203.0.113.8',
        'X-Request-Id': 'client-address-line',
      },
    );
    expect(answer.status).toBe(200);
    const line = await waitFor('the request line', () =>
      instance.output
        .split('\n')
        .filter((l) => l.includes('"client-address-line"'))
        .map((l) => JSON.parse(l) as { req?: unknown; res?: unknown; msg: string })
        .find((l) => l.msg === 'request completed'),
    );
    expect(line.req).toEqual({
      id: 'client-address-line',
      method: 'GET',
      url: '/api/users/someone/prevnames',
      remoteAddress: '127.0.0.4',
    });
    expect(line.res).toEqual({ statusCode: 200 });
  });

  it('does not serve the metrics through the proxy, by any spelling of the path', async () => {
    const client = from('127.0.0.5');
    for (const path of [
      '/api/metrics',
      '/api/metrics/',
      '/API/Metrics',
      '//api//metrics',
      '/api/%6Detrics',
      '/api/./metrics',
      '/api/metrics?format=text',
    ]) {
      const answer = await client.request('GET', path);
      expect([path, answer.status, answer.status && answer.headers['content-type']]).toEqual([
        path,
        404,
        'application/json',
      ]);
      expect(answer.status && JSON.parse(answer.body)).toEqual({ message: 'Not found', code: 404 });
    }
    // On the instance itself (the internal network, where Prometheus scrapes), they are there.
    const internal = new KeepAliveClient(instance.url);
    clients.push(internal);
    const direct = await internal.request('GET', '/api/metrics');
    expect(direct.status).toBe(200);
    expect(direct.status && direct.body).toContain('name_history_sse_listeners');
  });

  it('answers its own errors with the service’s error body', async () => {
    const answer = await from('127.0.0.6').request('POST', PUBLISH, {
      userId: 'x',
      type: 'username',
      name: 'x'.repeat(70_000),
      changedAt: '2024-01-01T00:00:00.000Z',
    });
    expect([answer.status, answer.status && answer.headers['content-type']]).toEqual([
      413,
      'application/json',
    ]);
    expect(answer.status && JSON.parse(answer.body)).toEqual({
      message: 'Request body exceeds the 16 KiB limit',
      code: 413,
    });
  });
});
