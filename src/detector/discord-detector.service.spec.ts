import { afterEach, beforeEach, describe, expect, it, jest } from '@jest/globals';
import { Logger } from '@nestjs/common';
import { once } from 'node:events';
import net from 'node:net';
import { GatewayCloseCodes } from 'discord.js';
import {
  apiMember,
  apiUser,
  FakeDiscord,
  TEST_DISCORD_TOKEN,
  type FakeDiscordOptions,
} from '../../test/support/fake-discord.js';
import { MetricsService } from '../metrics/metrics.service.js';
import { DetectorMetrics } from './detector.metrics.js';
import { Clock } from './clock.js';
import { LocalLeases } from '../redis/leases.js';
import type { RedisConnections } from '../redis/index.js';
import type { DetectorOutbox } from './detector-outbox.js';
import { detectorSettings, type DetectorSettings } from './detector.settings.js';
import { DiscordDetectorService } from './discord-detector.service.js';
import type { MemberObservation } from './member-observation.js';
import { MemberListRequester } from './member-list-requester.js';
import { NameChangeDetector } from './name-change-detector.js';
import type { ReconciliationRun } from './reconciliation-run.js';

const GUILD = '800000000000000001';
const ALICE = apiUser('700000000000000001', 'alice');
const INTENT_HELP =
  'enable "Server Members Intent" under Bot → Privileged Gateway Intents in the Discord Developer Portal';
/** An address nothing listens on (a port just freed): connections are refused. */
async function unreachable(): Promise<string> {
  const server = net.createServer().listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as net.AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return `http://127.0.0.1:${port}/api`;
}

async function until(condition: () => boolean, timeoutMs = 3_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`Condition not met within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** The outbox as the service and the detector use it: records live updates. */
class RecordingOutbox {
  readonly live: MemberObservation[] = [];
  stopped = false;
  observeLive(observations: readonly MemberObservation[]): void {
    this.live.push(...observations);
  }
  observeFullView(observations: readonly MemberObservation[], run: ReconciliationRun): void {
    run.members += observations.length;
    run.track(() => undefined)();
  }
  async whenReconcilingBelow(): Promise<void> {}
  onLiveDropped(): () => void {
    return () => undefined;
  }
  stop(): Promise<void> {
    this.stopped = true;
    return Promise.resolve();
  }
}

describe('DiscordDetectorService', () => {
  let logs: string[];
  let warnings: string[];
  let errors: string[];
  let outbox: RecordingOutbox;
  let discord: FakeDiscord;
  let service: DiscordDetectorService | undefined;

  async function start(
    world: FakeDiscordOptions,
    overrides: Partial<DetectorSettings> = {},
    prepare: (fake: FakeDiscord) => void = () => undefined,
  ): Promise<DiscordDetectorService> {
    discord = await FakeDiscord.start(world);
    prepare(discord);
    const settings: DetectorSettings = {
      ...detectorSettings({
        token: TEST_DISCORD_TOKEN,
        enabled: true,
        shardCount: undefined,
        leaseMs: 30_000,
        compareConcurrency: 1,
        apiUrl: discord.apiUrl,
        gatewayUrl: undefined,
      }),
      ...overrides,
    };
    outbox = new RecordingOutbox();
    const asOutbox = outbox as unknown as DetectorOutbox;
    service = new DiscordDetectorService(
      settings,
      new LocalLeases(),
      // No Redis: the detector's instances, identify limits and sessions in memory.
      { enabled: false, slotKey: () => '{test:detector}' } as unknown as RedisConnections,
      new NameChangeDetector(new Clock(), asOutbox, new DetectorMetrics(new MetricsService())),
      new MemberListRequester(settings, asOutbox),
      asOutbox,
      new DetectorMetrics(new MetricsService()),
    );
    service.onApplicationBootstrap();
    return service;
  }

  beforeEach(() => {
    logs = [];
    warnings = [];
    errors = [];
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
    await discord.close();
    jest.restoreAllMocks();
  });

  it('stays off without a token: no connection, no login', async () => {
    await start({ guilds: [] }, { token: undefined });
    await pause(100);
    expect(discord.rest).toEqual([]);
    expect(discord.connections).toEqual([]);
    expect(service!['gateway']).toBeUndefined();
    expect(logs).toEqual(['Discord detector: off (DISCORD_TOKEN is not set)']);
  });

  it('logs in, says as which bot, detects, and closes the connection resumable on shutdown', async () => {
    await start({ guilds: [{ id: GUILD, members: [apiMember(ALICE, { nick: 'Ali' })] }] });
    await until(() => logs.length === 6);
    expect(logs.slice(0, 3)).toEqual([
      'Discord detector: on (single instance, leases in memory)',
      'Discord detector: logging in to the gateway',
      'Discord detector: 1 shard(s) (Discord recommends 1), 16 identify(ies) per 5 s, 999 session start(s) left today',
    ]);
    expect(logs.slice(3).sort()).toEqual([
      'Discord detector: shard 0 of 1 on as prevnames-bot (900000000000000001), watching 1 server(s)',
      expect.stringMatching(
        new RegExp(
          `^Reconciled server ${GUILD}: compared 1 member\\(s\\) with their last known names in \\d+ ms; 0 change\\(s\\) recorded$`,
        ),
      ),
      'Running shard 0 of 1',
    ]);
    expect(service!['gateway']!.shardIds).toEqual([0]);
    expect(discord.isLive(0)).toBe(true);

    discord.changeMember(GUILD, ALICE.id, { nick: null });
    await until(() => outbox.live.length === 1);
    expect(outbox.live[0]).toMatchObject({ userId: ALICE.id, nickname: null });

    const connection = discord.identifies[0];
    await service!.onModuleDestroy();
    await until(() => connection.closeCode !== undefined);
    // 4200, not 1000: Discord keeps the session, for the next holder of the shard to resume.
    expect(connection.closeCode).toBe(4200);
    expect(service!['gateway']).toBeUndefined();
    expect(outbox.stopped).toBe(true);
    expect(logs.at(-1)).toBe('Discord detector: disconnected from the gateway');
    expect(errors).toEqual([]);
  });

  it('logs a refusal for disallowed intents once, with the fix, and does not retry soon', async () => {
    await start({ guilds: [] }, {}, (fake) => (fake.refuse = 'intents'));
    await until(() => errors.length === 1);
    await pause(200);
    expect(errors).toEqual([
      `Discord detector: Discord closed the gateway: the bot may not use the Server Members intent; ${INTENT_HELP}; trying again in 900000 ms`,
    ]);
    expect(discord.connections).toHaveLength(1);
    expect(discord.connections[0].closeCode).toBe(GatewayCloseCodes.DisallowedIntents);
    expect(service!['gateway']).toBeUndefined();
  });

  it('logs a refusal for an invalid token', async () => {
    await start({ guilds: [] }, {}, (fake) => (fake.refuse = 'token'));
    await until(() => errors.length === 1);
    await pause(100);
    expect(errors).toEqual([
      'Discord detector: Discord refused the login: DISCORD_TOKEN is not a valid bot token; trying again in 900000 ms',
    ]);
    expect(discord.rest.map((r) => r.path)).toEqual(['/api/v10/gateway/bot']);
    expect(discord.connections).toEqual([]);
  });

  it('tries a refused login again only after refusedRetryMs', async () => {
    await start({ guilds: [] }, { refusedRetryMs: 300 }, (fake) => (fake.refuse = 'token'));
    await until(() => discord.rest.length === 2);
    const [first, second] = discord.rest;
    expect(second.at - first.at).toBeGreaterThanOrEqual(290);
  });

  it('backs off, doubling, while Discord cannot be reached', async () => {
    await start(
      { guilds: [] },
      { apiUrl: await unreachable(), loginRetryMs: 50, loginRetryMaxMs: 150 },
    );
    await until(() => errors.length === 4, 5_000);
    expect(errors).toEqual(
      [50, 100, 150, 150].map((ms) =>
        expect.stringMatching(
          new RegExp(
            `^Discord detector: Discord login failed: .*ECONNREFUSED.*; trying again in ${ms} ms$`,
          ),
        ),
      ),
    );
  });

  it('stops, logs and reconnects later when the gateway closes the connection for good', async () => {
    await start({ guilds: [{ id: GUILD, members: [apiMember(ALICE)] }] }, { refusedRetryMs: 200 });
    await until(() => discord.isLive(0));
    discord.disconnect(0, GatewayCloseCodes.AuthenticationFailed);
    await until(() => errors.length === 1);
    expect(errors).toEqual([
      'Discord detector: Discord closed the gateway: DISCORD_TOKEN is not a valid bot token; trying again in 200 ms',
    ]);
    expect(service!['gateway']).toBeUndefined();
    // A new session: once the identify window (5 s) of the first has passed.
    await until(() => discord.identifies.length === 2, 8_000);
    expect(discord.breaches).toEqual([]);
    await until(() => discord.isLive(0));
  });
});
