import type { Type } from '@nestjs/common';
import type { NestExpressApplication } from '@nestjs/platform-express';
import { Test, type TestingModuleBuilder } from '@nestjs/testing';
import { createHash, randomBytes } from 'node:crypto';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { cp, mkdtemp, rename, rm } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { AppModule } from '../../src/app.module.js';
import { ExpressHttpAdapter } from '../../src/platform/express-http-adapter.js';
import { configureApp } from '../../src/app.setup.js';
import { HttpDrainService } from '../../src/health/http-drain.service.js';
import { appClient, type AppClient } from './app-client.js';
import { TestDatabase } from './database.js';
import { LOG_LEVEL, REDIS_URL } from './environment.js';
import { freePort } from './ports.js';
import { START_TIMEOUT_MS } from './service-process.js';

export interface TestApp {
  app: NestExpressApplication;
  /** http://127.0.0.1:<port> */
  url: string;
  close(): Promise<void>;
}

/**
 * A data directory for the embedded backend: a copy of one that the application initialised
 * with this tree's migrations. PGlite's initdb and the migrations take 4 s on an idle machine
 * and several times that under the suite's load, which every embedded suite paid again. The
 * copy is made once per set of migrations (and PGlite version), by whichever suite needs it
 * first; a fresh directory is still what `npm start` and the image's smoke start on.
 */
async function embeddedDataDir(): Promise<string> {
  const dataDir = await mkdtemp(join(tmpdir(), 'e2e-embedded-'));
  await cp(await embeddedTemplate(), dataDir, { recursive: true });
  return dataDir;
}

async function embeddedTemplate(): Promise<string> {
  const src = fileURLToPath(new URL('../../src/', import.meta.url));
  const key = createHash('sha256');
  const migrations = readdirSync(src, { recursive: true, encoding: 'utf8' })
    .filter((file) => /(^|\/)migrations\/[^/]+\.ts$/.test(file) && !file.endsWith('.spec.ts'))
    .sort();
  for (const file of migrations) key.update(file).update(readFileSync(join(src, file)));
  key.update(readFileSync(join(src, '../node_modules/@electric-sql/pglite/package.json')));
  const template = join(tmpdir(), `name-history-e2e-pglite-${key.digest('hex').slice(0, 16)}`);
  if (existsSync(template)) return template;
  const building = await mkdtemp(`${template}-building-`);
  await (await startApp({ DATA_DIR: building })).close();
  // Another worker may have made it meanwhile: the first rename wins, the others' go.
  await rename(building, template).catch(async (error: unknown) => {
    if (!existsSync(template)) throw error;
    await rm(building, { recursive: true, force: true });
  });
  return template;
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
  /** Modules of the test's own beside the application's (a consumer of the event log, say). */
  modules: Type[] = [],
): Promise<TestApp> {
  const moduleRef = await customize(
    Test.createTestingModule({ imports: [AppModule.forRoot({ LOG_LEVEL, ...env }), ...modules] }),
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
  /** As for `startApp`: modules of the test's own, in every instance. */
  modules?: Type[];
}

/** The application of a describe block, and the ways tests talk to it (`AppClient`). */
export interface AppFixture extends AppClient {
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

  const running = (): TestApp => {
    if (!current) throw new Error('The app is not running');
    return current;
  };
  const start = async () => {
    if (current) throw new Error('The app is already running');
    current = await startApp(env, port, options.customize, options.modules);
    port = Number(new URL(current.url).port);
  };

  beforeAll(async () => {
    if (backend === 'embedded') {
      dataDir = await embeddedDataDir();
      env = { DATA_DIR: dataDir };
    } else {
      db = await TestDatabase.create();
      env = backend === 'postgres' ? { DATABASE_URL: db.url } : redisEnv(db.url);
    }
    const extra = typeof options.env === 'function' ? await options.env(db) : options.env;
    env = { ...env, ...extra };
    if (options.fixedPort) port = await freePort();
    await start();
    // The embedded database compiles its WebAssembly first: long on a loaded machine.
  }, START_TIMEOUT_MS);

  afterAll(async () => {
    await Promise.all([...others].map((instance) => instance.close()));
    others.clear();
    await current?.close();
    current = undefined;
    await db?.drop();
    if (dataDir) await rm(dataDir, { recursive: true, force: true });
  });

  const client = appClient(running, others, () => env);

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
    ...client,
    startInstance: async (extra = {}) => {
      const instance = await startApp({ ...env, ...extra }, 0, options.customize, options.modules);
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
