import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from '@jest/globals';
import { Redis } from 'ioredis';
import { DetectorLease, RedisDetectorLease } from '../src/detector/detector-lease.js';
import { redisEnv, startApp, uniqueRedisPrefix, type TestApp } from './support/app.js';
import { TestDatabase } from './support/database.js';
import { LogCapture, reconciliations, recordedChanges } from './support/detector.js';
import { REDIS_URL } from './support/environment.js';
import {
  apiMember,
  apiUser,
  FakeDiscord,
  TEST_DISCORD_TOKEN,
  type GatewayConnection,
} from './support/fake-discord.js';
import { waitFor } from './support/ports.js';
import { settle } from './support/sse.js';

const GUILD = '800000000000000001';
const ALICE = apiUser('700000000000000001', 'alice', { global_name: 'Alice A.' });
const LEASE_MS = 1_500;

const tokenOf = (app: TestApp) =>
  app.app.get<DetectorLease, RedisDetectorLease>(DetectorLease).token;

describe('the gateway lease across instances (one Redis, one Discord)', () => {
  let db: TestDatabase;
  let redis: Redis;
  let discord: FakeDiscord;
  let logs: LogCapture;
  let prefix: string;
  let key: string;
  const apps: TestApp[] = [];

  const start = async () => {
    const app = await startApp({
      ...redisEnv(db.url, prefix),
      DISCORD_TOKEN: TEST_DISCORD_TOKEN,
      DISCORD_API_URL: discord.apiUrl,
      DETECTOR_LEASE_MS: String(LEASE_MS),
    });
    apps.push(app);
    return app;
  };
  const stop = async (app: TestApp) => {
    apps.splice(apps.indexOf(app), 1);
    await app.close();
  };
  /** The `index`th IDENTIFY (0: the first), once it has a READY. */
  const identified = (index: number, timeoutMs = 5_000) =>
    waitFor(
      `IDENTIFY #${index + 1}`,
      () => discord.identifies[index]?.session && discord.identifies[index],
      { timeoutMs, intervalMs: 10 },
    );

  beforeAll(async () => {
    logs = new LogCapture();
    db = await TestDatabase.create();
    redis = new Redis(REDIS_URL);
  });

  beforeEach(async () => {
    prefix = uniqueRedisPrefix();
    key = `${prefix}:detector:lease`;
    discord = await FakeDiscord.start({
      guilds: [{ id: GUILD, members: [apiMember(ALICE, { nick: 'Ali' })] }],
    });
  });

  afterEach(async () => {
    await Promise.all(apps.splice(0).map((app) => app.close()));
    await discord.close();
    await db.query('TRUNCATE name_change_events, known_names');
  });

  afterAll(async () => {
    await redis.quit();
    await db.drop();
    logs.restore();
  });

  it('lets exactly one of two instances connect; when it stops, the other takes over', async () => {
    const [a, b] = await Promise.all([start(), start()]);
    const first = await identified(0);
    await settle(LEASE_MS); // several renewals and attempts
    expect(discord.identifies).toHaveLength(1);
    const holderToken = await redis.get(key);
    const holder = [a, b].find((app) => tokenOf(app) === holderToken)!;
    const other = holder === a ? b : a;
    expect(holder).toBeDefined();
    const ttl = await redis.pttl(key);
    expect(ttl).toBeGreaterThan(0);
    expect(ttl).toBeLessThanOrEqual(LEASE_MS);

    const stoppedAt = Date.now();
    await stop(holder);
    expect(first.closeCode).toBe(1000);
    const next = await identified(1, LEASE_MS);
    // Released on shutdown: no need to wait for the lease to expire.
    expect(next.openedAt - stoppedAt).toBeLessThan(LEASE_MS);
    expect(await redis.get(key)).toBe(tokenOf(other));

    discord.changeMember(GUILD, ALICE.id, { nick: 'Ally' });
    await waitFor('the change recorded', async () => (await recordedChanges(db)).length > 0);
    expect(await recordedChanges(db)).toEqual([
      { userId: ALICE.id, type: 'displayname', name: 'Ali' },
    ]);
  });

  it('releases the lease on shutdown', async () => {
    const app = await start();
    const connection = await identified(0);
    expect(await redis.get(key)).toBe(tokenOf(app));
    await stop(app);
    expect(connection.closeCode).toBe(1000);
    expect(await redis.exists(key)).toBe(0);
  });

  it('deletes on shutdown no lease but its own', async () => {
    const app = await start();
    await identified(0);
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
    const connection = await identified(0, LEASE_MS * 2);
    // Not before the dead holder's lease expires, and right after (or right after start-up).
    expect(connection.openedAt).toBeGreaterThanOrEqual(expiresAt - 50);
    expect(connection.openedAt).toBeLessThan(Math.max(expiresAt, startedAt) + LEASE_MS / 3 + 500);
    expect(await redis.get(key)).toBe(tokenOf(app));
  });

  it('stops its client as soon as it finds the lease taken, and competes again', async () => {
    const app = await start();
    const first: GatewayConnection = await identified(0);
    await waitFor('the first full view', () => reconciliations(logs.messages).length > 0);
    await redis.set(key, 'usurper', 'PX', LEASE_MS);
    const takenAt = Date.now();
    await waitFor('the client closed', () => first.closeCode !== undefined, {
      timeoutMs: LEASE_MS,
      intervalMs: 10,
    });
    expect(first.closeCode).toBe(1000);
    expect(await redis.get(key)).toBe('usurper');
    const second = await identified(1, LEASE_MS * 2);
    expect(second.openedAt - takenAt).toBeGreaterThanOrEqual(LEASE_MS - 50);
    expect(await redis.get(key)).toBe(tokenOf(app));
  });
});

describe('the detector without a token', () => {
  let db: TestDatabase;
  let redis: Redis;
  let discord: FakeDiscord;
  let app: TestApp;
  let prefix: string;

  beforeAll(async () => {
    db = await TestDatabase.create();
    redis = new Redis(REDIS_URL);
    discord = await FakeDiscord.start({ guilds: [] });
    prefix = uniqueRedisPrefix();
    app = await startApp({
      ...redisEnv(db.url, prefix),
      DISCORD_TOKEN: '',
      DISCORD_API_URL: discord.apiUrl,
    });
  });

  afterAll(async () => {
    await app.close();
    await discord.close();
    await redis.quit();
    await db.drop();
  });

  it('never calls Discord and takes no lease', async () => {
    await settle(300);
    expect(discord.rest).toEqual([]);
    expect(discord.connections).toEqual([]);
    expect(await redis.exists(`${prefix}:detector:lease`)).toBe(0);
  });
});
