import type { NestExpressApplication } from '@nestjs/platform-express';
import { Test, type TestingModuleBuilder } from '@nestjs/testing';
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AppModule } from '../../src/app.module.js';
import { ExpressHttpAdapter } from '../../src/platform/express-http-adapter.js';
import { configureApp } from '../../src/app.setup.js';
import { EventStreamService } from '../../src/events/event-stream.service.js';
import { HttpDrainService } from '../../src/health/http-drain.service.js';
import { historyPath, LISTEN, PUBLISH, type HistoryBody } from './api.js';
import { TestDatabase } from './database.js';
import { LOG_LEVEL, REDIS_URL } from './environment.js';
import type { NameEventBody } from './events.js';
import { http, post, type HttpResult } from './http.js';
import { freePort, waitFor } from './ports.js';
import { rawCommand } from './redis-server.js';
import { sendSentinel, type Sentinel } from './sentinel.js';
import { streamsClosedAfterEach, type SseStream } from './sse.js';

export interface TestApp {
  app: NestExpressApplication;
  /** http://127.0.0.1:<port> */
  url: string;
  close(): Promise<void>;
}

/** A key prefix of its own, so parallel test files never see each other's events. */
export function uniqueRedisPrefix(): string {
  return `test_${randomBytes(4).toString('hex')}`;
}

/**
 * The real application, as main.ts builds it, listening on a free loopback port (or on `port`,
 * to restart an application where its clients expect it). `customize` may replace providers
 * that reach outside the machine (the Discord gateway), never the database or Redis.
 * `env` is the whole environment it sees (plus a quiet log level).
 */
export async function startApp(
  env: Record<string, string | undefined>,
  port = 0,
  customize: (builder: TestingModuleBuilder) => TestingModuleBuilder = (builder) => builder,
): Promise<TestApp> {
  const moduleRef = await customize(
    Test.createTestingModule({ imports: [AppModule.forRoot({ LOG_LEVEL, ...env })] }),
  ).compile();
  const app = moduleRef.createNestApplication<NestExpressApplication>(new ExpressHttpAdapter(), {
    bodyParser: false,
    bufferLogs: true,
  });
  configureApp(app);
  await app.listen(port, '127.0.0.1');
  const address = app.getHttpServer().address() as AddressInfo;
  return { app, url: `http://127.0.0.1:${address.port}`, close: () => app.close() };
}

/** The usual environment: real Postgres at `databaseUrl`, real Redis under a fresh prefix. */
export function redisEnv(databaseUrl: string, prefix = uniqueRedisPrefix()) {
  return { DATABASE_URL: databaseUrl, REDIS_URL, REDIS_KEY_PREFIX: prefix };
}

type Env = Record<string, string | undefined>;

/**
 * Where events are stored and carried: a Postgres database of the file's own and the shared
 * Redis under a key prefix of its own (the default); that Postgres with the in-process bus;
 * or the embedded defaults (PGlite in a temporary directory, the in-process bus).
 */
export type Backend = 'postgres+redis' | 'postgres' | 'embedded';

export interface AppFixtureOptions {
  backend?: Backend;
  /**
   * More environment. A function is called once the database exists, before the app starts
   * (to put a proxy in front of the database, say); it gets the database (none when embedded).
   */
  env?: Env | ((db: TestDatabase | undefined) => Env | Promise<Env>);
  /** Listen on a port outside the kernel's ephemeral range, which `start()` can bind again. */
  fixedPort?: boolean;
  /** As for `startApp`: replaces providers that reach outside the machine. */
  customize?: (builder: TestingModuleBuilder) => TestingModuleBuilder;
}

/** The application of a describe block, and the ways tests talk to it. */
export interface AppFixture {
  /** The Nest application (`app.get(SomeService)`). */
  readonly app: NestExpressApplication;
  /** http://127.0.0.1:<port> */
  readonly url: string;
  readonly port: number;
  /** The file's Postgres database (not with the embedded backend). */
  readonly db: TestDatabase;
  /** The environment the app runs with. */
  readonly env: Env;
  /** The app as `startApp` returns it. */
  readonly instance: TestApp;
  /** Opens a stream on the app, closed after the test. */
  listen(query?: string, headers?: Record<string, string>): Promise<SseStream>;
  /**
   * Opens a stream once the app can: a listen is answered 500 while Redis (or, resuming,
   * the database) is down, and that answer is closed and the listen tried again.
   */
  listenWhenUp(query?: string, headers?: Record<string, string>): Promise<SseStream>;
  /** Opens a stream on another instance (`startInstance`), closed after the test. */
  listenTo(
    instance: { url: string },
    query?: string,
    headers?: Record<string, string>,
  ): Promise<SseStream>;
  /** POSTs an event (or anything) to the publish route. */
  publish(body: unknown, headers?: Record<string, string>): Promise<HttpResult>;
  /** GETs a user's history. */
  history(userId: string, query?: string): Promise<HttpResult<HistoryBody>>;
  /** See `sendSentinel`: publishes through this app. */
  sentinel(streams: readonly SseStream[], body?: NameEventBody): Promise<Sentinel>;
  /** Listeners on the app (or on `instance`), counting those being set up. */
  listenerCount(instance?: TestApp): number;
  /**
   * Waits until no stream is open or being set up on the app and its other instances, and
   * (with Redis) until none of them is subscribed: then a publish finds nobody listening.
   */
  untilNobodyListens(): Promise<void>;
  /** Another instance on the same database and Redis prefix, closed after the block. */
  startInstance(env?: Env): Promise<TestApp>;
  /**
   * Stops the app as an instance going away (SIGTERM: drained, then closed); `start()`
   * brings it back on the same port.
   */
  stop(): Promise<void>;
  start(): Promise<void>;
}

/**
 * The application of a describe block, started once before its tests with a database of
 * its own, and stopped (the database dropped) after them. Streams opened through it are
 * closed after each test. Call it in the describe block's body.
 */
export function useApp(options: AppFixtureOptions = {}): AppFixture {
  const backend = options.backend ?? 'postgres+redis';
  let db: TestDatabase | undefined;
  let dataDir: string | undefined;
  let env: Env = {};
  let port = 0;
  let current: TestApp | undefined;
  const others = new Set<TestApp>();
  const open = streamsClosedAfterEach();

  const running = (): TestApp => {
    if (!current) throw new Error('The app is not running');
    return current;
  };
  const start = async () => {
    if (current) throw new Error('The app is already running');
    current = await startApp(env, port, options.customize);
    port = Number(new URL(current.url).port);
  };

  beforeAll(async () => {
    if (backend === 'embedded') {
      dataDir = await mkdtemp(join(tmpdir(), 'e2e-embedded-'));
      env = { DATA_DIR: dataDir };
    } else {
      db = await TestDatabase.create();
      env = backend === 'postgres' ? { DATABASE_URL: db.url } : redisEnv(db.url);
    }
    const extra = typeof options.env === 'function' ? await options.env(db) : options.env;
    env = { ...env, ...extra };
    if (options.fixedPort) port = await freePort();
    await start();
  });

  afterAll(async () => {
    await Promise.all([...others].map((instance) => instance.close()));
    others.clear();
    await current?.close();
    current = undefined;
    await db?.drop();
    if (dataDir) await rm(dataDir, { recursive: true, force: true });
  });

  const count = (instance: TestApp) => instance.app.get(EventStreamService).listenerCount;

  return {
    get app() {
      return running().app;
    },
    get url() {
      return running().url;
    },
    get port() {
      return port;
    },
    get db() {
      if (!db) throw new Error(`The ${backend} backend has no Postgres database`);
      return db;
    },
    get env() {
      return env;
    },
    get instance() {
      return running();
    },
    listen: (query = '', headers = {}) => open(`${running().url}${LISTEN}${query}`, headers),
    listenWhenUp: (query = '', headers = {}) =>
      waitFor('a listen to succeed', async () => {
        const stream = await open(`${running().url}${LISTEN}${query}`, headers);
        if (stream.status === 200) return stream;
        stream.close();
        return undefined;
      }),
    listenTo: (instance, query = '', headers = {}) =>
      open(`${instance.url}${LISTEN}${query}`, headers),
    publish: (body, headers = {}) => post(`${running().url}${PUBLISH}`, body, headers),
    history: (userId, query = '') =>
      http<HistoryBody>(`${running().url}${historyPath(userId, query)}`),
    sentinel: (streams, body) => sendSentinel(running().url, streams, body),
    listenerCount: (instance = running()) => count(instance),
    untilNobodyListens: async () => {
      const instances = [running(), ...others];
      await waitFor('no listener left', () => instances.every((i) => count(i) === 0));
      const redisUrl = env.REDIS_URL;
      const prefix = env.REDIS_KEY_PREFIX;
      if (redisUrl && prefix) {
        await waitFor('no instance subscribed', async () => {
          const { hostname, port: redisPort } = new URL(redisUrl);
          const reply = await rawCommand(
            Number(redisPort || 6379),
            ['PUBSUB', 'NUMSUB', `${prefix}:name-events`],
            hostname,
          );
          return reply.endsWith('\r\n:0');
        });
      }
    },
    startInstance: async (extra = {}) => {
      const instance = await startApp({ ...env, ...extra });
      others.add(instance);
      return {
        ...instance,
        close: async () => {
          others.delete(instance);
          await instance.close();
        },
      };
    },
    stop: async () => {
      const stopping = running();
      // As main.ts on SIGTERM: without the drain, a client that reconnects on its keep-alive
      // connection (an EventSource handed over with a short retry) holds the close forever.
      stopping.app.get(HttpDrainService).begin();
      await stopping.close();
      current = undefined;
    },
    start,
  };
}

/** The two shapes the stream contract must hold on. */
export const STREAM_BACKENDS: { name: string; backend: Backend }[] = [
  { name: 'PostgreSQL and Redis', backend: 'postgres+redis' },
  { name: 'the embedded defaults (PGlite, in-process bus)', backend: 'embedded' },
];
