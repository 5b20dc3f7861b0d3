import { IsOptional, IsString, Matches, MinLength } from 'class-validator';
import { defineConfig, Variable } from '../config/config-section.js';
import { IsIntegerBetween } from '../config/transforms.js';

export class DatabaseVariables {
  @Variable('`postgres://…`', { default: 'unset: embedded PGlite under `DATA_DIR`', secret: true })
  @IsOptional()
  @Matches(/^postgres(ql)?:\/\/.+/, { message: 'must be a postgres:// or postgresql:// URL' })
  DATABASE_URL?: string;

  @Variable('Postgres connections per instance (the embedded database always uses one)')
  @IsIntegerBetween(1, 1000)
  DATABASE_POOL_SIZE: number = 10;

  @Variable('embedded database files')
  @IsOptional()
  @IsString()
  @MinLength(1)
  DATA_DIR: string = './data';
}

/** Postgres at DATABASE_URL, or the embedded PGlite under DATA_DIR. */
export const databaseConfig = defineConfig({
  namespace: 'database',
  description: 'Postgres at DATABASE_URL, or the embedded PGlite under DATA_DIR.',
  variables: DatabaseVariables,
  build: (env) => ({
    url: env.DATABASE_URL,
    dataDir: env.DATA_DIR,
    poolSize: env.DATABASE_POOL_SIZE,
  }),
});
