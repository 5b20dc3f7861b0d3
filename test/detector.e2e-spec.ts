import {
  afterAll,
  afterEach,
  beforeAll,
  beforeEach,
  describe,
  expect,
  it,
  jest,
} from '@jest/globals';
import { Client } from 'discord.js';
import { Redis } from 'ioredis';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Clock } from '../src/detector/clock.js';
import {
  DetectorLease,
  LocalDetectorLease,
  RedisDetectorLease,
} from '../src/detector/detector-lease.js';
import { DiscordClientFactory } from '../src/detector/discord-client.factory.js';
import { redisEnv, startApp, uniqueRedisPrefix, type TestApp } from './support/app.js';
import { TestDatabase } from './support/database.js';
import {
  apiMember,
  apiUser,
  FakeDiscordClientFactory,
  TEST_DISCORD_TOKEN,
  type FakeGatewayOptions,
} from './support/discord-gateway.js';
import { REDIS_URL } from './support/environment.js';
import { http } from './support/http.js';
import { settle, SseStream } from './support/sse.js';

const LISTEN = '/api/webhooks/prevnames/listen';
const GUILD = '800000000000000001';
const ALICE = apiUser('700000000000000001', 'alice', { global_name: 'Alice A.' });
const BOB = apiUser('700000000000000002', 'bob');
const DETECTED_AT = '2025-03-04T05:06:07.089Z';
const LEASE_MS = 1_500;

const world = (): FakeGatewayOptions => ({
  guilds: [{ id: GUILD, members: [apiMember(ALICE, { nick: 'Ali' }), apiMember(BOB)] }],
});

class FixedClock extends Clock {
  override now(): Date {
    return new Date(DETECTED_AT);
  }
}

interface DetectorApp extends TestApp {
  factory: FakeDiscordClientFactory;
  lease: DetectorLease;
}

/**
 * The real application, as test/support/app.ts starts it, with the Discord client factory
 * replaced by the network-free gateway and the clock fixed.
 */
async function startDetectorApp(env: Record<string, string | undefined>): Promise<DetectorApp> {
  const factory = new FakeDiscordClientFactory(world);
  const started = await startApp(env, 0, (builder) =>
    builder
      .overrideProvider(DiscordClientFactory)
      .useValue(factory)
      .overrideProvider(Clock)
      .useValue(new FixedClock()),
  );
  return { ...started, factory, lease: started.app.get(DetectorLease) };
}

async function historyOf(app: TestApp, userId: string) {
  return (await http(`${app.url}/api/users/${userId}/prevnames`)).body;
}

async function until(condition: () => boolean | Promise<boolean>, timeoutMs = 5_000) {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`Condition not met within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

describe('the detector end to end (Postgres, Redis)', () => {
  let db: TestDatabase;
  let app: DetectorApp;
  let login: jest.SpiedFunction<Client['login']>;
  const streams: SseStream[] = [];

  beforeAll(async () => {
    login = jest.spyOn(Client.prototype, 'login');
    db = await TestDatabase.create();
    app = await startDetectorApp({ ...redisEnv(db.url), DISCORD_TOKEN: TEST_DISCORD_TOKEN });
    const gateway = await app.factory.gateway(0);
    await gateway.ready;
  });

  afterEach(() => {
    for (const stream of streams.splice(0)) stream.close();
  });

  afterAll(async () => {
    await app.close();
    await db.drop();
    login.mockRestore();
  });

  it('logs in once, with the token, through discord.js', () => {
    expect(login.mock.calls).toEqual([[TEST_DISCORD_TOKEN]]);
    expect(app.factory.gateways).toHaveLength(1);
  });

  it('sends a gateway name change to an SSE listener and records it in the history', async () => {
    const stream = await SseStream.open(`${app.url}${LISTEN}`);
    streams.push(stream);
    expect(stream.status).toBe(200);
    await stream.until((s) => s.raw.length > 0);

    app.factory.gateways[0].memberUpdate(
      GUILD,
      apiMember({ ...ALICE, username: 'alice_new' }, { nick: 'Ali' }),
    );
    await stream.untilEvents(1);
    await settle(200);
    const [{ id }] = stream.events;
    expect(id).toMatch(/^\d+$/);
    expect(stream.events).toEqual([
      {
        id,
        data: { userId: ALICE.id, type: 'username', name: 'alice', changedAt: DETECTED_AT },
      },
    ]);
    expect(stream.raw).toContain(
      `id: ${id}\ndata: {"userId":"${ALICE.id}","type":"username","name":"alice","changedAt":"${DETECTED_AT}"}\n\n`,
    );
    expect(await historyOf(app, ALICE.id)).toEqual({
      userId: ALICE.id,
      prevnames: [{ type: 'username', name: 'alice', changedAt: DETECTED_AT }],
      code: 200,
    });
  });

  it('stores a detected change when no listener is connected, once', async () => {
    app.factory.gateways[0].memberUpdate(
      GUILD,
      apiMember({ ...BOB, global_name: null }, { nick: 'B' }),
    );
    app.factory.gateways[0].memberUpdate(GUILD, apiMember(BOB, { nick: null }));
    await until(
      async () =>
        (await db.query('SELECT 1 FROM name_change_events WHERE user_id = $1', [BOB.id])).length >
        0,
    );
    await settle(300);
    expect(await historyOf(app, BOB.id)).toEqual({
      userId: BOB.id,
      prevnames: [{ type: 'displayname', name: 'B', changedAt: DETECTED_AT }],
      code: 200,
    });
    expect(
      await db.query('SELECT user_id, type, name FROM name_change_events WHERE user_id = $1', [
        BOB.id,
      ]),
    ).toEqual([{ user_id: BOB.id, type: 'displayname', name: 'B' }]);
  });
});

describe('the gateway lease across instances (one Redis)', () => {
  let db: TestDatabase;
  let redis: Redis;
  let prefix: string;
  let key: string;
  const apps: DetectorApp[] = [];

  const start = async () => {
    const app = await startDetectorApp({
      ...redisEnv(db.url, prefix),
      DISCORD_TOKEN: TEST_DISCORD_TOKEN,
      DETECTOR_LEASE_MS: String(LEASE_MS),
    });
    apps.push(app);
    return app;
  };
  const stop = async (app: DetectorApp) => {
    apps.splice(apps.indexOf(app), 1);
    await app.close();
  };
  const tokenOf = (app: DetectorApp) => (app.lease as RedisDetectorLease).token;

  beforeAll(async () => {
    db = await TestDatabase.create();
    redis = new Redis(REDIS_URL);
  });

  beforeEach(() => {
    prefix = uniqueRedisPrefix();
    key = `${prefix}:detector:lease`;
  });

  afterEach(async () => {
    await Promise.all(apps.splice(0).map((app) => app.close()));
  });

  afterAll(async () => {
    await redis.quit();
    await db.drop();
  });

  it('lets exactly one of two instances run the client; when it stops, the other takes over', async () => {
    const [a, b] = await Promise.all([start(), start()]);
    await settle(LEASE_MS); // several renewals and attempts
    const running = [a, b].filter((app) => app.factory.gateways.length > 0);
    expect(running).toHaveLength(1);
    const [holder] = running;
    const other = holder === a ? b : a;
    expect(holder.factory.gateways).toHaveLength(1);
    expect(other.factory.gateways).toHaveLength(0);
    expect(await redis.get(key)).toBe(tokenOf(holder));
    const ttl = await redis.pttl(key);
    expect(ttl).toBeGreaterThan(0);
    expect(ttl).toBeLessThanOrEqual(LEASE_MS);

    const stoppedAt = Date.now();
    await stop(holder);
    expect(holder.factory.gateways[0].destroyed).toBe(true);
    const next = await other.factory.gateway(0, LEASE_MS);
    // Released on shutdown: no need to wait for the lease to expire.
    expect(next.createdAt - stoppedAt).toBeLessThan(LEASE_MS);
    await next.ready;
    expect(await redis.get(key)).toBe(tokenOf(other));

    next.memberUpdate(GUILD, apiMember(ALICE, { nick: 'Ally' }));
    await until(
      async () =>
        ((await historyOf(other, ALICE.id)) as { prevnames: unknown[] }).prevnames.length > 0,
    );
    expect(await historyOf(other, ALICE.id)).toEqual({
      userId: ALICE.id,
      prevnames: [{ type: 'displayname', name: 'Ali', changedAt: DETECTED_AT }],
      code: 200,
    });
  });

  it('releases the lease on shutdown', async () => {
    const app = await start();
    const gateway = await app.factory.gateway(0);
    await gateway.ready;
    expect(await redis.get(key)).toBe(tokenOf(app));
    await stop(app);
    expect(gateway.destroyed).toBe(true);
    expect(await redis.exists(key)).toBe(0);
  });

  it('deletes on shutdown no lease but its own', async () => {
    const app = await start();
    const gateway = await app.factory.gateway(0);
    await gateway.ready;
    await redis.set(key, 'another-instance', 'PX', 60_000);
    await stop(app);
    expect(await redis.get(key)).toBe('another-instance');
    await redis.del(key);
  });

  it('takes over from a holder that died without releasing once its lease expires', async () => {
    await redis.set(key, 'dead-instance', 'PX', LEASE_MS);
    const expiresAt = Date.now() + LEASE_MS;
    const app = await start();
    const startedAt = Date.now();
    const gateway = await app.factory.gateway(0, LEASE_MS * 2);
    // Not before the dead holder's lease expires, and right after (or right after start-up).
    expect(gateway.createdAt).toBeGreaterThanOrEqual(expiresAt - 50);
    expect(gateway.createdAt).toBeLessThan(Math.max(expiresAt, startedAt) + LEASE_MS / 3);
    await gateway.ready;
    expect(await redis.get(key)).toBe(tokenOf(app));
  });

  it('stops its client as soon as it finds the lease taken, and competes again', async () => {
    const app = await start();
    const first = await app.factory.gateway(0);
    await first.ready;
    await redis.set(key, 'usurper', 'PX', LEASE_MS);
    const takenAt = Date.now();
    await until(() => first.destroyed, LEASE_MS);
    // Found at the next renewal, a third of the lease later at most.
    expect(first.destroyedAt! - takenAt).toBeLessThanOrEqual(LEASE_MS / 3 + 500);
    expect(await redis.get(key)).toBe('usurper');
    expect(app.factory.gateways).toHaveLength(1);
    const second = await app.factory.gateway(1, LEASE_MS * 2);
    await second.ready;
    expect(second.createdAt - takenAt).toBeGreaterThanOrEqual(LEASE_MS - 50);
    expect(await redis.get(key)).toBe(tokenOf(app));
  });
});

describe('the detector without a token', () => {
  let db: TestDatabase;
  let redis: Redis;
  let app: DetectorApp;
  let prefix: string;
  let login: jest.SpiedFunction<Client['login']>;

  beforeAll(async () => {
    login = jest.spyOn(Client.prototype, 'login');
    db = await TestDatabase.create();
    redis = new Redis(REDIS_URL);
    prefix = uniqueRedisPrefix();
    app = await startDetectorApp({ ...redisEnv(db.url, prefix), DISCORD_TOKEN: '' });
  });

  afterAll(async () => {
    await app.close();
    await redis.quit();
    await db.drop();
    login.mockRestore();
  });

  it('creates no client, never logs in, and takes no lease', async () => {
    await settle(300);
    expect(app.factory.gateways).toEqual([]);
    expect(login).not.toHaveBeenCalled();
    expect(await redis.exists(`${prefix}:detector:lease`)).toBe(0);
  });
});

describe('the detector on the embedded defaults (PGlite, no Redis)', () => {
  let dataDir: string;
  let app: DetectorApp;

  beforeAll(async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'detector-e2e-'));
    app = await startDetectorApp({ DATA_DIR: dataDir, DISCORD_TOKEN: TEST_DISCORD_TOKEN });
  });

  afterAll(async () => {
    await app.close();
    await rm(dataDir, { recursive: true, force: true });
  });

  it('runs the client without a lease and records what it detects', async () => {
    expect(app.lease).toBeInstanceOf(LocalDetectorLease);
    const gateway = await app.factory.gateway(0);
    await gateway.ready;
    gateway.memberUpdate(GUILD, apiMember({ ...ALICE, global_name: 'Alice B.' }, { nick: 'Ali' }));
    await until(
      async () =>
        ((await historyOf(app, ALICE.id)) as { prevnames: unknown[] }).prevnames.length > 0,
    );
    expect(await historyOf(app, ALICE.id)).toEqual({
      userId: ALICE.id,
      prevnames: [{ type: 'displayname', name: 'Alice A.', changedAt: DETECTED_AT }],
      code: 200,
    });
  });
});
