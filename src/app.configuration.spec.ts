import { getMetadataStorage } from 'class-validator';
import { APPLICATION_MODULES } from './app.module.js';
import { variableDocs } from './config/config-section.js';
import { ConfigurationError, loadConfiguration } from './config/load-configuration.js';
import { collectOwned } from './config/owns.decorator.js';

/** The application's configuration, as every module declares its own part of it. */
const sections = collectOwned(APPLICATION_MODULES).config;
const load = (env: Record<string, string | undefined>) => loadConfiguration(env, sections);

describe("the application's configuration", () => {
  it('gives every variable its default', () => {
    const config = load({});
    expect(config.get('app')).toEqual({
      port: 3000,
      nodeEnv: undefined,
      shutdownTimeoutMs: 10_000,
      logLevel: 'info',
    });
    expect(config.get('database')).toEqual({ url: undefined, dataDir: './data', poolSize: 10 });
    expect(config.get('redis')).toMatchObject({ url: undefined, keyPrefix: 'prevnames' });
    expect(config.get('sse')).toEqual({
      keepAliveMs: 15_000,
      replayLimit: 10_000,
      retryMs: 3_000,
      bufferLimitBytes: 1024 * 1024,
      maxListeners: 50_000,
      maxListenersPerAddress: 1_000,
      replayConcurrency: 8,
      replayStallMs: 10_000,
    });
    expect(config.get('rateLimit')).toEqual({ limit: 0, windowMs: 60_000 });
    expect(config.get('retention')).toEqual({ days: 0, intervalMs: 3_600_000, batchSize: 1000 });
    expect(config.get('admin')).toEqual({ token: undefined });
  });

  it('reads integers and treats empty variables as unset', () => {
    const config = load({ PORT: ' 8080 ', PUBLISH_TOKEN: '', SSE_REPLAY_LIMIT: '0' });
    expect(config.get('app')).toMatchObject({ port: 8080 });
    expect(config.get('publish')).toEqual({ token: undefined });
    expect(config.get('sse')).toMatchObject({ replayLimit: 0 });
  });

  it('reads the Discord proxies, and the REST base without its trailing slash', () => {
    expect(
      load({
        DISCORD_API_URL: 'http://rest-proxy.internal:8080/api/',
        DISCORD_GATEWAY_URL: 'ws://gateway-proxy.internal:7878',
      }).get('discord'),
    ).toMatchObject({
      apiUrl: 'http://rest-proxy.internal:8080/api',
      gatewayUrl: 'ws://gateway-proxy.internal:7878',
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
    [
      { REDIS_URL: 'redis://a:6379', REDIS_SENTINELS: 'b:26379', REDIS_SENTINEL_MASTER: 'm' },
      'Invalid configuration: set REDIS_URL or REDIS_SENTINELS, not both',
    ],
    [
      { REDIS_URL: 'redis://a:6379', REDIS_CLUSTER_NODES: 'b:7000,c:7000' },
      'Invalid configuration: set REDIS_CLUSTER_NODES or REDIS_URL, not both',
    ],
    [
      { REDIS_SENTINELS: 'b:26379', REDIS_SENTINEL_MASTER: 'm', REDIS_CLUSTER_NODES: 'c:7000' },
      'Invalid configuration: set REDIS_CLUSTER_NODES or REDIS_SENTINELS, not both',
    ],
    [
      { REDIS_CLUSTER_NODES: 'c:7000', REDIS_CLUSTER_TLS: 'yes' },
      'Invalid configuration: REDIS_CLUSTER_TLS must be true or false (got "yes")',
    ],
    [
      { HTTP_HEADERS_TIMEOUT_MS: '20000', HTTP_REQUEST_TIMEOUT_MS: '10000' },
      'Invalid configuration: HTTP_HEADERS_TIMEOUT_MS must not exceed HTTP_REQUEST_TIMEOUT_MS',
    ],
  ])('refuses %j with one line naming the variable, and never echoes a secret', (env, message) => {
    expect(() => load(env)).toThrow(new ConfigurationError(message));
  });

  it('documents every variable it validates (the docs are generated from them)', () => {
    for (const section of sections) {
      const validated = getMetadataStorage()
        .getTargetValidationMetadatas(section.variables, '', true, false)
        .map((rule) => rule.propertyName);
      expect([...variableDocs(section.variables).keys()].sort()).toEqual(
        [...new Set(validated)].sort(),
      );
    }
  });
});
