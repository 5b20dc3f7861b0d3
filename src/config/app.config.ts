import { IsIn, IsOptional } from 'class-validator';
import { defineConfig, Variable } from './config-section.js';
import { IsIntegerBetween } from './transforms.js';

export class AppVariables {
  @Variable('HTTP port')
  @IsIntegerBetween(0, 65535)
  PORT: number = 3000;

  @Variable(
    '`development`, `production` or `test`. `production` (the Docker image sets it) keeps the logs JSON even on a terminal',
    { default: 'unset' },
  )
  @IsOptional()
  @IsIn(['development', 'production', 'test'])
  NODE_ENV?: string;

  @Variable('graceful shutdown budget (a drain takes about a second); past it the process exits 1')
  @IsIntegerBetween(0, 600_000)
  SHUTDOWN_TIMEOUT_MS: number = 10_000;

  @Variable('pino level (`silent` to mute)')
  @IsOptional()
  @IsIn(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'])
  LOG_LEVEL: string = 'info';
}

/** The process: its port, its logs, its shutdown. */
export const appConfig = defineConfig({
  namespace: 'app',
  description: 'The process: its port, its logs, its shutdown.',
  variables: AppVariables,
  build: (env) => ({
    port: env.PORT,
    nodeEnv: env.NODE_ENV,
    shutdownTimeoutMs: env.SHUTDOWN_TIMEOUT_MS,
    logLevel: env.LOG_LEVEL,
  }),
});
