import type { NestExpressApplication } from '@nestjs/platform-express';
import { Test, type TestingModuleBuilder } from '@nestjs/testing';
import { randomBytes } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { AppModule } from '../../src/app.module.js';
import { ExpressHttpAdapter } from '../../src/common/express-http-adapter.js';
import { configureApp } from '../../src/app.setup.js';
import { LOG_LEVEL, REDIS_URL } from './environment.js';

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
