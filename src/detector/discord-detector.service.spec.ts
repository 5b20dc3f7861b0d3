import { afterEach, beforeEach, describe, expect, it, jest } from '@jest/globals';
import { Logger } from '@nestjs/common';
import { Client, GatewayCloseCodes } from 'discord.js';
import {
  apiMember,
  apiUser,
  FakeDiscordClientFactory,
  TEST_DISCORD_TOKEN,
  type FakeGatewayOptions,
} from '../../test/support/discord-gateway.js';
import type { NameChange, PublishOutcome, PublishService } from '../publish/publish.service.js';
import { Clock } from './clock.js';
import { LocalDetectorLease } from './detector-lease.js';
import { DetectorOutbox } from './detector-outbox.js';
import { detectorSettings, type DetectorSettings } from './detector.settings.js';
import { DiscordDetectorService } from './discord-detector.service.js';
import { MemberCacheWarmer } from './member-cache-warmer.js';
import { NameChangeDetector } from './name-change-detector.js';

const GUILD = '800000000000000001';
const ALICE = apiUser('700000000000000001', 'alice');
const INTENT_HELP =
  'enable "Server Members Intent" under Bot → Privileged Gateway Intents in the Discord Developer Portal';

async function until(condition: () => boolean, timeoutMs = 3_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`Condition not met within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('DiscordDetectorService', () => {
  let logs: string[];
  let warnings: string[];
  let errors: string[];
  let published: NameChange[];
  let factory: FakeDiscordClientFactory;
  let service: DiscordDetectorService | undefined;

  function start(
    world: FakeGatewayOptions,
    overrides: Partial<DetectorSettings> = {},
  ): DiscordDetectorService {
    const settings: DetectorSettings = {
      ...detectorSettings({ token: TEST_DISCORD_TOKEN, leaseMs: 30_000 }, { keyPrefix: 'test' }),
      ...overrides,
    };
    factory = new FakeDiscordClientFactory(() => world);
    const publisher = {
      publish: (change: NameChange): Promise<PublishOutcome> => {
        published.push(change);
        return Promise.resolve({
          event: { id: '1', ...change, changedAt: change.changedAt.toISOString() },
          created: true,
          receivers: 0,
        });
      },
    };
    const outbox = new DetectorOutbox(publisher as unknown as PublishService, settings);
    service = new DiscordDetectorService(
      settings,
      new LocalDetectorLease(),
      factory,
      new NameChangeDetector(new Clock(), outbox, settings),
      new MemberCacheWarmer(settings),
      outbox,
    );
    service.onApplicationBootstrap();
    return service;
  }

  beforeEach(() => {
    logs = [];
    warnings = [];
    errors = [];
    published = [];
    service = undefined;
    for (const [level, sink] of [
      ['log', logs],
      ['warn', warnings],
      ['error', errors],
    ] as const) {
      jest.spyOn(Logger.prototype, level).mockImplementation((message: unknown) => {
        sink.push(String(message));
      });
    }
  });

  afterEach(async () => {
    await service?.onModuleDestroy();
    jest.restoreAllMocks();
  });

  it('stays off without a token: no client, no login', async () => {
    const login = jest.spyOn(Client.prototype, 'login');
    start({ guilds: [] }, { token: undefined });
    await pause(100);
    expect(factory.gateways).toEqual([]);
    expect(login).not.toHaveBeenCalled();
    expect(service!.activeClient).toBeUndefined();
    expect(logs).toEqual(['Discord detector: off (DISCORD_TOKEN is not set)']);
  });

  it('logs in, says as which bot, publishes what it detects, and destroys the client on shutdown', async () => {
    start({ guilds: [{ id: GUILD, members: [apiMember(ALICE, { nick: 'Ali' })] }] });
    const gateway = await factory.gateway(0);
    await gateway.ready;
    expect(logs).toEqual([
      'Discord detector: on (single instance, no lease)',
      'Discord detector: logging in to the gateway',
      'Discord detector: on as prevnames-bot (900000000000000001), watching 1 server(s)',
    ]);
    expect(service!.activeClient).toBe(gateway.client);

    gateway.memberUpdate(GUILD, apiMember(ALICE, { nick: null }));
    await until(() => published.length === 1);
    expect(published.map(({ userId, type, name }) => ({ userId, type, name }))).toEqual([
      { userId: ALICE.id, type: 'displayname', name: 'Ali' },
    ]);

    await service!.onModuleDestroy();
    expect(gateway.destroyed).toBe(true);
    expect(gateway.client.token).toBeNull();
    expect(service!.activeClient).toBeUndefined();
    expect(logs.at(-1)).toBe('Discord detector: disconnected from the gateway');
    expect(errors).toEqual([]);
  });

  it('logs a refusal for disallowed intents once, with the fix, and does not retry soon', async () => {
    start({ guilds: [], refuse: 'intents' });
    const gateway = await factory.gateway(0);
    await until(() => errors.length === 1);
    await pause(200);
    expect(errors).toEqual([
      `Discord detector: Discord refused the login: the bot may not use the Server Members intent; ${INTENT_HELP}; trying again in 900000 ms`,
    ]);
    expect(warnings).toEqual(['Discord shard 0: Used disallowed intents']);
    expect(factory.gateways).toHaveLength(1);
    expect(gateway.loginAttempts).toBe(1);
    expect(gateway.destroyed).toBe(true);
    expect(service!.activeClient).toBeUndefined();
  });

  it('logs a refusal for an invalid token', async () => {
    start({ guilds: [], refuse: 'token' });
    await until(() => errors.length === 1);
    await pause(100);
    expect(errors).toEqual([
      'Discord detector: Discord refused the login: DISCORD_TOKEN is not a valid bot token; trying again in 900000 ms',
    ]);
    expect(factory.gateways).toHaveLength(1);
  });

  it('tries a refused login again only after refusedRetryMs', async () => {
    start({ guilds: [], refuse: 'token' }, { refusedRetryMs: 300 });
    await factory.gateway(0);
    const first = Date.now();
    await factory.gateway(1);
    expect(Date.now() - first).toBeGreaterThanOrEqual(290);
    await pause(100);
    expect(factory.gateways).toHaveLength(2);
  });

  it('backs off, doubling, while Discord cannot be reached', async () => {
    start({ guilds: [], refuse: 'unreachable' }, { loginRetryMs: 50, loginRetryMaxMs: 150 });
    await until(() => errors.length === 4, 2_000);
    expect(errors).toEqual(
      [50, 100, 150, 150].map(
        (ms) =>
          `Discord detector: Discord login failed: getaddrinfo ENOTFOUND discord.com; trying again in ${ms} ms`,
      ),
    );
  });

  it('stops, logs and reconnects later when the gateway closes the connection for good', async () => {
    start({ guilds: [{ id: GUILD, members: [apiMember(ALICE)] }] }, { refusedRetryMs: 200 });
    const gateway = await factory.gateway(0);
    await gateway.ready;
    gateway.close(GatewayCloseCodes.DisallowedIntents);
    await until(() => errors.length === 1);
    expect(errors).toEqual([
      `Discord detector: Discord closed the gateway: the bot may not use the Server Members intent; ${INTENT_HELP}; trying again in 200 ms`,
    ]);
    expect(gateway.destroyed).toBe(true);
    expect(service!.activeClient).toBeUndefined();
    const next = await factory.gateway(1);
    await next.ready;
    expect(service!.activeClient).toBe(next.client);
  });
});
