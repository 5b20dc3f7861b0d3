import { plainToInstance, Transform } from 'class-transformer';
import {
  IsIn,
  IsInt,
  IsOptional,
  IsString,
  Matches,
  Max,
  Min,
  MinLength,
  validateSync,
} from 'class-validator';

// Only a plain decimal becomes a number: "12abc" or "1e3" stay strings and fail @IsInt,
// so the message shows what was given.
const toInteger = ({ value }: { value: unknown }) =>
  typeof value === 'string' && /^-?\d+$/.test(value) ? Number(value) : value;

/**
 * Every environment variable the service reads, validated once at boot. `.env.example`
 * lists the same variables with their defaults; keep the two in step.
 */
export class EnvironmentVariables {
  @IsOptional()
  @IsIn(['development', 'production', 'test'])
  NODE_ENV?: string;

  @IsOptional()
  @Transform(toInteger)
  @IsInt()
  @Min(0)
  @Max(65535)
  PORT: number = 3000;

  @IsOptional()
  @Matches(/^postgres(ql)?:\/\/.+/, { message: 'must be a postgres:// or postgresql:// URL' })
  DATABASE_URL?: string;

  @IsOptional()
  @Transform(toInteger)
  @IsInt()
  @Min(1)
  @Max(1000)
  DATABASE_POOL_SIZE: number = 10;

  @IsOptional()
  @IsString()
  @MinLength(1)
  DATA_DIR: string = './data';

  @IsOptional()
  @Matches(/^rediss?:\/\/.+/, { message: 'must be a redis:// or rediss:// URL' })
  REDIS_URL?: string;

  @IsOptional()
  @Matches(/^\s*[^\s:,]+:\d{1,5}\s*(,\s*[^\s:,]+:\d{1,5}\s*)*$/, {
    message: 'must be a comma-separated list of host:port',
  })
  REDIS_SENTINELS?: string;

  @IsOptional()
  @Matches(/^[A-Za-z0-9._-]{1,64}$/, {
    message: 'must be the name of the master the sentinels monitor',
  })
  REDIS_SENTINEL_MASTER?: string;

  @IsOptional()
  @IsString()
  REDIS_SENTINEL_PASSWORD?: string;

  @IsOptional()
  @IsString()
  REDIS_USERNAME?: string;

  @IsOptional()
  @IsString()
  REDIS_PASSWORD?: string;

  @IsOptional()
  @Matches(/^[A-Za-z0-9:_.-]{1,64}$/, {
    message: 'must be 1-64 characters of letters, digits, ":", "_", "." or "-"',
  })
  REDIS_KEY_PREFIX: string = 'prevnames';

  @IsOptional()
  @IsString()
  @MinLength(16, { message: 'must be at least 16 characters long' })
  PUBLISH_TOKEN?: string;

  @IsOptional()
  @IsString()
  @MinLength(16, { message: 'must be at least 16 characters long' })
  ADMIN_TOKEN?: string;

  @IsOptional()
  @Transform(toInteger)
  @IsInt()
  @Min(0)
  @Max(36_500)
  RETENTION_DAYS: number = 0;

  @IsOptional()
  @Transform(toInteger)
  @IsInt()
  @Min(100)
  @Max(86_400_000)
  RETENTION_INTERVAL_MS: number = 3_600_000;

  @IsOptional()
  @Transform(toInteger)
  @IsInt()
  @Min(1)
  @Max(100_000)
  RETENTION_BATCH_SIZE: number = 1000;

  @IsOptional()
  @IsString()
  @MinLength(20, { message: 'must be a Discord bot token' })
  DISCORD_TOKEN?: string;

  @IsOptional()
  @Matches(/^https?:\/\/[^\s/?#]+(\/[^\s?#]*)?$/, {
    message: 'must be an http:// or https:// URL without query or fragment',
  })
  DISCORD_API_URL?: string;

  @IsOptional()
  @Matches(/^wss?:\/\/[^\s/?#]+(\/[^\s?#]*)?$/, {
    message: 'must be a ws:// or wss:// URL without query or fragment',
  })
  DISCORD_GATEWAY_URL?: string;

  @IsOptional()
  @Transform(toInteger)
  @IsInt()
  @Min(1000)
  @Max(600_000)
  DETECTOR_LEASE_MS: number = 30_000;

  @IsOptional()
  @Transform(toInteger)
  @IsInt()
  @Min(1000)
  @Max(3_600_000)
  SSE_KEEPALIVE_MS: number = 15_000;

  @IsOptional()
  @Transform(toInteger)
  @IsInt()
  @Min(0)
  @Max(1_000_000)
  SSE_REPLAY_LIMIT: number = 10_000;

  @IsOptional()
  @Transform(toInteger)
  @IsInt()
  @Min(0)
  @Max(3_600_000)
  SSE_RETRY_MS: number = 3_000;

  @IsOptional()
  @Transform(toInteger)
  @IsInt()
  @Min(16 * 1024)
  @Max(256 * 1024 * 1024)
  SSE_BUFFER_LIMIT_BYTES: number = 1024 * 1024;

  @IsOptional()
  @Transform(toInteger)
  @IsInt()
  @Min(1)
  @Max(1_000_000)
  SSE_MAX_LISTENERS: number = 50_000;

  @IsOptional()
  @IsString()
  @Matches(/^(\*|https?:\/\/[^\s,]+(\s*,\s*https?:\/\/[^\s,]+)*)$/, {
    message: 'must be "*" or a comma-separated list of http(s) origins',
  })
  CORS_ORIGINS?: string;

  @IsOptional()
  @IsString()
  @Matches(/^(true|false|loopback|\d{1,2}|[0-9a-fA-F:.,/\s]+)$/, {
    message: 'must be true, false, loopback, a hop count, or a list of addresses/subnets',
  })
  TRUST_PROXY: string = 'false';

  @IsOptional()
  @Transform(toInteger)
  @IsInt()
  @Min(0)
  @Max(1_000_000)
  PUBLISH_RATE_LIMIT: number = 0;

  @IsOptional()
  @Transform(toInteger)
  @IsInt()
  @Min(1000)
  @Max(3_600_000)
  PUBLISH_RATE_WINDOW_MS: number = 60_000;

  @IsOptional()
  @Transform(toInteger)
  @IsInt()
  @Min(0)
  @Max(600_000)
  SHUTDOWN_TIMEOUT_MS: number = 10_000;

  @IsOptional()
  @IsIn(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'])
  LOG_LEVEL: string = 'info';
}

/** Raised for a bad environment; its message is one line naming the variable. */
export class ConfigurationError extends Error {
  override readonly name = 'ConfigurationError';
}

// URLs may carry credentials (a proxy's user:password): never echoed either.
const SECRET_VARIABLES = new Set([
  'DATABASE_URL',
  'REDIS_URL',
  'REDIS_SENTINEL_PASSWORD',
  'REDIS_PASSWORD',
  'PUBLISH_TOKEN',
  'ADMIN_TOKEN',
  'DISCORD_TOKEN',
  'DISCORD_API_URL',
  'DISCORD_GATEWAY_URL',
]);

export function validateEnvironment(env: Record<string, string | undefined>): EnvironmentVariables {
  const parsed = plainToInstance(EnvironmentVariables, given(env), { exposeDefaultValues: true });
  const [error] = validateSync(parsed, { whitelist: true });
  if (error) {
    const constraints = error.constraints ?? {};
    // The type is the first thing to be wrong about: "abc" is not an integer before it is too large.
    const key =
      ['isInt', 'isString'].find((name) => name in constraints) ?? Object.keys(constraints)[0];
    const reason = key ? constraints[key] : 'is invalid';
    const shown = SECRET_VARIABLES.has(error.property)
      ? ''
      : ` (got ${JSON.stringify(env[error.property])})`;
    throw new ConfigurationError(
      `Invalid configuration: ${error.property} ${stripProperty(reason, error.property)}${shown}`,
    );
  }
  if (parsed.REDIS_SENTINELS && parsed.REDIS_URL) {
    throw new ConfigurationError(
      'Invalid configuration: set REDIS_URL or REDIS_SENTINELS, not both',
    );
  }
  if (Boolean(parsed.REDIS_SENTINELS) !== Boolean(parsed.REDIS_SENTINEL_MASTER)) {
    throw new ConfigurationError(
      'Invalid configuration: REDIS_SENTINELS and REDIS_SENTINEL_MASTER go together',
    );
  }
  return parsed;
}

/** The variables that are set, trimmed; an empty variable counts as unset. */
function given(env: Record<string, string | undefined>): Record<string, string> {
  const set: Record<string, string> = {};
  for (const [key, value] of Object.entries(env)) {
    if (value !== undefined && value.trim() !== '') set[key] = value.trim();
  }
  return set;
}

function stripProperty(message: string, property: string): string {
  return message.startsWith(`${property} `) ? message.slice(property.length + 1) : message;
}
