import { IsOptional, IsString, Matches } from 'class-validator';
import { defineConfig, Variable } from './config-section.js';
import { IsIntegerBetween } from './transforms.js';

export class HttpVariables {
  @Variable(
    '`*` or a comma-separated list of origins allowed to call the API (EventSource included)',
    { default: 'unset: no CORS' },
  )
  @IsOptional()
  @IsString()
  @Matches(/^(\*|https?:\/\/[^\s,]+(\s*,\s*https?:\/\/[^\s,]+)*)$/, {
    message: 'must be "*" or a comma-separated list of http(s) origins',
  })
  CORS_ORIGINS?: string;

  @Variable(
    'Express `trust proxy`: `true`, a hop count, `loopback` or subnets; behind proxies, exactly their hops (so `1` behind the shipped nginx).',
  )
  @IsOptional()
  @IsString()
  @Matches(/^(true|false|loopback|\d{1,2}|[0-9a-fA-F:.,/\s]+)$/, {
    message: 'must be true, false, loopback, a hop count, or a list of addresses/subnets',
  })
  TRUST_PROXY: string = 'false';

  @Variable("a request's line and headers must arrive within this time, else 408")
  @IsIntegerBetween(100, 600_000)
  HTTP_HEADERS_TIMEOUT_MS: number = 10_000;

  @Variable(
    'a whole request, body included, must arrive within this time, else 408 (at least `HTTP_HEADERS_TIMEOUT_MS`)',
  )
  @IsIntegerBetween(100, 3_600_000)
  HTTP_REQUEST_TIMEOUT_MS: number = 30_000;
}

/** The HTTP server: CORS, the proxies in front, the time a request may take to arrive. */
export const httpConfig = defineConfig({
  namespace: 'http',
  description:
    'The HTTP server: CORS, the proxies in front, the time a request may take to arrive.',
  variables: HttpVariables,
  build: (env) => ({
    corsOrigins: parseOrigins(env.CORS_ORIGINS),
    trustProxy: parseTrustProxy(env.TRUST_PROXY),
    headersTimeoutMs: env.HTTP_HEADERS_TIMEOUT_MS,
    requestTimeoutMs: env.HTTP_REQUEST_TIMEOUT_MS,
  }),
  // The headers are part of the request: Node needs the one timeout within the other.
  check: (env) =>
    env.HTTP_HEADERS_TIMEOUT_MS > env.HTTP_REQUEST_TIMEOUT_MS
      ? 'HTTP_HEADERS_TIMEOUT_MS must not exceed HTTP_REQUEST_TIMEOUT_MS'
      : undefined,
});

function parseOrigins(value: string | undefined): string[] | '*' | undefined {
  if (value === undefined || value === '*') return value;
  return value.split(',').map((origin) => origin.trim().replace(/\/$/, ''));
}

/** Express's `trust proxy`: a boolean, a hop count, or addresses/subnets as given. */
function parseTrustProxy(value: string): boolean | number | string {
  if (value === 'true' || value === 'false') return value === 'true';
  return /^\d+$/.test(value) ? Number(value) : value;
}
