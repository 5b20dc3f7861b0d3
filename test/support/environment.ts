/**
 * Where the tests find their services. Defaults match `.env.example`; override with
 * TEST_DATABASE_URL / TEST_REDIS_URL (or DATABASE_URL / REDIS_URL).
 */
export const BASE_DATABASE_URL =
  process.env.TEST_DATABASE_URL ??
  process.env.DATABASE_URL ??
  'postgres://postgres@127.0.0.1:5432/test';

export const REDIS_URL =
  process.env.TEST_REDIS_URL ?? process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';

/** Logs stay quiet unless TEST_LOG_LEVEL asks for them. */
export const LOG_LEVEL = process.env.TEST_LOG_LEVEL ?? 'silent';
