import 'reflect-metadata';
import { Logger } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import type { NestExpressApplication } from '@nestjs/platform-express';
import { existsSync } from 'node:fs';
import { AppModule } from './app.module.js';
import { ExpressHttpAdapter } from './platform/express-http-adapter.js';
import { configureApp } from './app.setup.js';
import { appConfig } from './config/app.config.js';
import type { ConfigOf } from './config/config-section.js';
import { ConfigurationError } from './config/load-configuration.js';
import { HttpDrainService } from './health/http-drain.service.js';

async function bootstrap(): Promise<void> {
  if (existsSync('.env')) process.loadEnvFile('.env');
  const app = await NestFactory.create<NestExpressApplication>(
    AppModule.forRoot(process.env),
    new ExpressHttpAdapter(),
    {
      bodyParser: false,
      bufferLogs: true,
      // Flushed below once the JSON logger is in place; when start-up fails, only if the
      // failure is not a configuration error, which is one line (see the end of this file).
      autoFlushLogs: false,
      abortOnError: false,
    },
  );
  configureApp(app);
  app.flushLogs();
  const { port, shutdownTimeoutMs } = app.get<ConfigOf<typeof appConfig>>(appConfig.KEY);

  const drain = app.get(HttpDrainService);
  for (const signal of ['SIGTERM', 'SIGINT'] as const) {
    process.once(signal, () => {
      // Past the budget, in-flight work is abandoned rather than holding the exit forever.
      setTimeout(() => process.exit(1), shutdownTimeoutMs).unref();
      // At once, before any module starts shutting down: readiness 503, no new connection,
      // `Connection: close` on every answer from now on.
      drain.begin();
      app.close().then(
        () => process.exit(0),
        () => process.exit(1),
      );
    });
  }

  await app.listen(port);
  new Logger('Bootstrap').log(`Listening on port ${port}`);
}

bootstrap().catch((error: unknown) => {
  // The logger may not exist yet: a bad configuration (a bad variable, a DATA_DIR in use)
  // is one line on stderr. Anything else comes with what was logged up to it.
  if (error instanceof ConfigurationError) {
    process.stderr.write(`${error.message}\n`);
  } else {
    Logger.flush();
    process.stderr.write(`Failed to start: ${String((error as Error)?.stack ?? error)}\n`);
  }
  process.exit(1);
});
