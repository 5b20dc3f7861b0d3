import 'reflect-metadata';
import { NestFactory } from '@nestjs/core';
import { AppModule } from '../app.module.js';
import { API_PREFIX } from '../app.setup.js';
import { writeGenerated } from '../common/write-generated.js';
import { buildOpenApiDocument } from './openapi.js';

const COMMITTED = 'openapi/openapi.json';

/**
 * `npm run openapi`: writes the OpenAPI document to openapi/openapi.json, keys sorted so
 * that it only changes when the API does. `--check` only compares, and fails when the
 * committed file is stale. Preview mode builds the module graph without running any
 * provider: no database, no Redis.
 */
async function generate(): Promise<void> {
  const app = await NestFactory.create(AppModule.forRoot({ LOG_LEVEL: 'silent' }), {
    preview: true,
    logger: false,
    abortOnError: false,
  });
  app.setGlobalPrefix(API_PREFIX);
  const text = `${JSON.stringify(sortKeys(buildOpenApiDocument(app)), null, 2)}\n`;
  await app.close();
  writeGenerated(new Map([[COMMITTED, text]]), 'npm run openapi');
}

function sortKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortKeys);
  if (value === null || typeof value !== 'object') return value;
  return Object.fromEntries(
    Object.keys(value)
      .sort()
      .map((key) => [key, sortKeys((value as Record<string, unknown>)[key])]),
  );
}

generate().catch((error: unknown) => {
  process.stderr.write(`${String((error as Error)?.stack ?? error)}\n`);
  process.exit(1);
});
