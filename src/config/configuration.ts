import { EnvironmentVariables, validateEnvironment } from './environment.js';

/**
 * The typed configuration, grouped by concern. Inject `ConfigService<AppConfig, true>` and
 * read a group with `config.get('sse', { infer: true })`.
 */
export interface AppConfig {
  app: { port: number; shutdownTimeoutMs: number; logLevel: string; nodeEnv: string | undefined };
  http: {
    corsOrigins: string[] | '*' | undefined;
    trustProxy: boolean | number | string;
    headersTimeoutMs: number;
    requestTimeoutMs: number;
  };
  database: { url: string | undefined; dataDir: string; poolSize: number };
  redis: {
    url: string | undefined;
    sentinels: { host: string; port: number }[] | undefined;
    sentinelMaster: string | undefined;
    sentinelPassword: string | undefined;
    username: string | undefined;
    password: string | undefined;
    keyPrefix: string;
  };
  sse: {
    keepAliveMs: number;
    replayLimit: number;
    retryMs: number;
    bufferLimitBytes: number;
    maxListeners: number;
  };
  publish: { token: string | undefined; rateLimit: number; rateWindowMs: number };
  discord: {
    token: string | undefined;
    leaseMs: number;
    /** Without a trailing slash. */
    apiUrl: string | undefined;
    gatewayUrl: string | undefined;
  };
  /** The privacy administration: on when `adminToken` is set. */
  privacy: {
    adminToken: string | undefined;
    /** 0: keep forever. */
    retentionDays: number;
    retentionIntervalMs: number;
    retentionBatchSize: number;
  };
}

export function buildConfiguration(env: Record<string, string | undefined>): AppConfig {
  const e: EnvironmentVariables = validateEnvironment(env);
  return {
    app: {
      port: e.PORT,
      shutdownTimeoutMs: e.SHUTDOWN_TIMEOUT_MS,
      logLevel: e.LOG_LEVEL,
      nodeEnv: e.NODE_ENV,
    },
    database: { url: e.DATABASE_URL, dataDir: e.DATA_DIR, poolSize: e.DATABASE_POOL_SIZE },
    redis: {
      url: e.REDIS_URL,
      sentinels: parseHostPorts(e.REDIS_SENTINELS),
      sentinelMaster: e.REDIS_SENTINEL_MASTER,
      sentinelPassword: e.REDIS_SENTINEL_PASSWORD,
      username: e.REDIS_USERNAME,
      password: e.REDIS_PASSWORD,
      keyPrefix: e.REDIS_KEY_PREFIX,
    },
    sse: {
      keepAliveMs: e.SSE_KEEPALIVE_MS,
      replayLimit: e.SSE_REPLAY_LIMIT,
      retryMs: e.SSE_RETRY_MS,
      bufferLimitBytes: e.SSE_BUFFER_LIMIT_BYTES,
      maxListeners: e.SSE_MAX_LISTENERS,
    },
    http: {
      corsOrigins: parseOrigins(e.CORS_ORIGINS),
      trustProxy: parseTrustProxy(e.TRUST_PROXY),
      headersTimeoutMs: e.HTTP_HEADERS_TIMEOUT_MS,
      requestTimeoutMs: e.HTTP_REQUEST_TIMEOUT_MS,
    },
    publish: {
      token: e.PUBLISH_TOKEN,
      rateLimit: e.PUBLISH_RATE_LIMIT,
      rateWindowMs: e.PUBLISH_RATE_WINDOW_MS,
    },
    discord: {
      token: e.DISCORD_TOKEN,
      leaseMs: e.DETECTOR_LEASE_MS,
      apiUrl: e.DISCORD_API_URL?.replace(/\/+$/, ''),
      gatewayUrl: e.DISCORD_GATEWAY_URL,
    },
    privacy: {
      adminToken: e.ADMIN_TOKEN,
      retentionDays: e.RETENTION_DAYS,
      retentionIntervalMs: e.RETENTION_INTERVAL_MS,
      retentionBatchSize: e.RETENTION_BATCH_SIZE,
    },
  };
}

function parseHostPorts(value: string | undefined): { host: string; port: number }[] | undefined {
  if (value === undefined) return undefined;
  return value.split(',').map((entry) => {
    const [host, port] = entry.trim().split(':');
    return { host, port: Number(port) };
  });
}

function parseOrigins(value: string | undefined): string[] | '*' | undefined {
  if (value === undefined) return undefined;
  if (value === '*') return '*';
  return value.split(',').map((origin) => origin.trim().replace(/\/$/, ''));
}

/** Express's `trust proxy`: a boolean, a hop count, or addresses/subnets as given. */
function parseTrustProxy(value: string): boolean | number | string {
  if (value === 'true' || value === 'false') return value === 'true';
  return /^\d+$/.test(value) ? Number(value) : value;
}
