import { buildConfiguration } from './configuration.js';
import { ConfigurationError, validateEnvironment } from './environment.js';

describe('validateEnvironment', () => {
  it('gives every variable its default', () => {
    const env = validateEnvironment({});
    expect(env).toMatchObject({
      PORT: 3000,
      DATA_DIR: './data',
      DATABASE_POOL_SIZE: 10,
      REDIS_KEY_PREFIX: 'prevnames',
      SSE_KEEPALIVE_MS: 15000,
      SSE_REPLAY_LIMIT: 10000,
      LOG_LEVEL: 'info',
      PUBLISH_RATE_LIMIT: 0,
      RETENTION_DAYS: 0,
      RETENTION_INTERVAL_MS: 3_600_000,
    });
    expect(env.ADMIN_TOKEN).toBeUndefined();
    expect(env.DATABASE_URL).toBeUndefined();
    expect(env.REDIS_URL).toBeUndefined();
  });

  it('reads integers and treats empty variables as unset', () => {
    const env = validateEnvironment({ PORT: ' 8080 ', PUBLISH_TOKEN: '', SSE_REPLAY_LIMIT: '0' });
    expect(env.PORT).toBe(8080);
    expect(env.PUBLISH_TOKEN).toBeUndefined();
    expect(env.SSE_REPLAY_LIMIT).toBe(0);
  });

  it('reads the Discord proxies, and the REST base without its trailing slash', () => {
    const { discord } = buildConfiguration({
      DISCORD_API_URL: 'http://rest-proxy.internal:8080/api/',
      DISCORD_GATEWAY_URL: 'ws://gateway-proxy.internal:7878',
    });
    expect(discord.apiUrl).toBe('http://rest-proxy.internal:8080/api');
    expect(discord.gatewayUrl).toBe('ws://gateway-proxy.internal:7878');
    expect(buildConfiguration({}).discord).toMatchObject({
      apiUrl: undefined,
      gatewayUrl: undefined,
    });
  });

  it.each([
    [{ PORT: '1e3' }, 'Invalid configuration: PORT must be an integer number (got "1e3")'],
    [{ PORT: '70000' }, 'Invalid configuration: PORT must not be greater than 65535 (got "70000")'],
    [
      { REDIS_URL: 'http://x' },
      'Invalid configuration: REDIS_URL must be a redis:// or rediss:// URL',
    ],
    [
      { PUBLISH_TOKEN: 'short' },
      'Invalid configuration: PUBLISH_TOKEN must be at least 16 characters long',
    ],
    [
      { DISCORD_API_URL: 'discord.com/api' },
      'Invalid configuration: DISCORD_API_URL must be an http:// or https:// URL without query or fragment',
    ],
    [
      { DISCORD_API_URL: 'https://proxy.internal/api?v=10' },
      'Invalid configuration: DISCORD_API_URL must be an http:// or https:// URL without query or fragment',
    ],
    [
      { DISCORD_GATEWAY_URL: 'https://gateway.discord.gg' },
      'Invalid configuration: DISCORD_GATEWAY_URL must be a ws:// or wss:// URL without query or fragment',
    ],
    [
      { ADMIN_TOKEN: 'fifteen-chars!!' },
      'Invalid configuration: ADMIN_TOKEN must be at least 16 characters long',
    ],
    [
      { RETENTION_DAYS: '-1' },
      'Invalid configuration: RETENTION_DAYS must not be less than 0 (got "-1")',
    ],
    [
      { CORS_ORIGINS: 'nope' },
      'Invalid configuration: CORS_ORIGINS must be "*" or a comma-separated list of http(s) origins (got "nope")',
    ],
  ])('refuses %j with one line naming the variable, and never echoes a secret', (env, message) => {
    expect(() => validateEnvironment(env)).toThrow(new ConfigurationError(message));
  });
});
