import { afterEach, beforeEach, describe, expect, it, jest } from '@jest/globals';
import { Logger } from '@nestjs/common';
import { GatewayDispatchEvents, GatewayOpcodes } from 'discord.js';
import { testGateway } from '../../test/support/detector-gateway.js';
import { apiMember, apiUser, FakeDiscord, manyMembers } from '../../test/support/fake-discord.js';
import { MetricsService } from '../metrics/metrics.service.js';
import { DetectorMetrics } from './detector.metrics.js';
import type { Clock } from './clock.js';
import type { DetectorOutbox } from './detector-outbox.js';
import type { MemberObservation } from './member-observation.js';
import { NameChangeDetector } from './name-change-detector.js';
import type { ReconciliationRun } from './reconciliation-run.js';

const GUILD_A = '800000000000000001';
const LARGE = '800000000000000002';
const ALICE = apiUser('700000000000000001', 'alice', { global_name: 'Alice A.' });
const BOB = apiUser('700000000000000002', 'bob');
const LEGACY = apiUser('700000000000000003', 'carol', { discriminator: '1234' });
const AT = new Date('2025-03-04T05:06:07.089Z');

const fixedClock: Clock = { now: () => new Date(AT) };

/** An outbox that records what it is given; a full view's members count as compared at once. */
class RecordingOutbox {
  readonly live: MemberObservation[] = [];
  readonly fullViews: { guildId: string; userIds: string[] }[] = [];
  /** The runs the full views belong to, each once. */
  readonly runs = new Set<ReconciliationRun>();

  observeLive(observations: readonly MemberObservation[]): void {
    this.live.push(...observations);
  }

  observeFullView(observations: readonly MemberObservation[], run: ReconciliationRun): void {
    this.fullViews.push({ guildId: run.guildId, userIds: observations.map((o) => o.userId) });
    this.runs.add(run);
    run.members += observations.length;
    run.track(() => undefined)();
  }
}

async function until(condition: () => boolean, timeoutMs = 5_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`Condition not met within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

describe('NameChangeDetector on the gateway connections, over the gateway protocol', () => {
  let discord: FakeDiscord;
  let gateway: ReturnType<typeof testGateway>;
  let outbox: RecordingOutbox;
  let stop: () => void;
  let metrics: DetectorMetrics;
  const large = manyMembers(60, 710000000000000000n, 'member');

  beforeEach(async () => {
    jest.spyOn(Logger.prototype, 'log').mockImplementation(() => undefined);
    metrics = new DetectorMetrics(new MetricsService());
    discord = await FakeDiscord.start({
      shardCount: 2,
      guilds: [
        {
          id: GUILD_A,
          members: [
            apiMember(ALICE, { nick: 'Ali' }),
            apiMember(BOB),
            apiMember(LEGACY, { nick: 'Caz' }),
          ],
        },
        { id: LARGE, shardId: 1, members: large, inGuildCreate: [large[7].user.id] },
      ],
    });
    gateway = testGateway(discord);
    outbox = new RecordingOutbox();
    const asOutbox = outbox as unknown as DetectorOutbox;
    stop = new NameChangeDetector(fixedClock, asOutbox, metrics).watch(gateway.gateway);
    await gateway.connectAll();
    await until(() => outbox.fullViews.length === 2);
  });

  afterEach(async () => {
    stop();
    await gateway.stopAll();
    await discord.close();
    jest.restoreAllMocks();
  });

  it("reads each GUILD_CREATE's members as a full view, without the bot", async () => {
    expect(outbox.fullViews).toEqual(
      expect.arrayContaining([
        { guildId: GUILD_A, userIds: [ALICE.id, BOB.id, LEGACY.id] },
        { guildId: LARGE, userIds: [large[7].user.id] },
      ]),
    );
    expect(outbox.live).toEqual([]);
    // The small server's view is complete; the large one waits for its member chunks.
    expect(figures(outbox.runs)).toEqual([
      { guildId: GUILD_A, members: 3, changes: 0 },
      { guildId: LARGE, members: 1, changes: 0 },
    ]);
    expect(await reconciliations(metrics)).toEqual({ count: 1, timed: 1 });
  });

  it('reads member chunks as the rest of the full view, finished with the last chunk', async () => {
    await gateway.gateway.send(1, {
      op: GatewayOpcodes.RequestGuildMembers,
      d: { guild_id: LARGE, query: '', limit: 0, nonce: 'all' },
    });
    await until(() => outbox.fullViews.length === 3);
    expect(outbox.fullViews.at(-1)).toEqual({
      guildId: LARGE,
      userIds: large.map((m) => m.user.id),
    });
    // Its GUILD_CREATE's one member and the chunk's 60 (the bot left out): one view.
    expect(figures(outbox.runs)).toEqual([
      { guildId: GUILD_A, members: 3, changes: 0 },
      { guildId: LARGE, members: 61, changes: 0 },
    ]);
    expect(await reconciliations(metrics)).toEqual({ count: 2, timed: 2 });
  });

  /** Where a live update on `shardId` came from: its session, at some sequence, not replayed. */
  const liveOn = (shardId: number) => ({
    shardId,
    sessionId: discord.session(shardId)!.id,
    sequence: expect.any(Number),
    replayed: false,
  });

  it('reads member updates and joins as live updates, with every name field, at detection time', async () => {
    discord.changeUser(ALICE.id, { username: 'alice2', global_name: null });
    discord.changeMember(GUILD_A, LEGACY.id, { nick: null });
    discord.changeBot(GUILD_A, { nick: 'bot nick' });
    discord.addMember(LARGE, apiMember(apiUser('700000000000000009', 'newcomer')));
    await until(() => outbox.live.length === 3);
    // Two shards, two connections: the server on shard 1 may be heard first.
    expect(outbox.live).toHaveLength(3);
    expect(outbox.live).toEqual(
      expect.arrayContaining([
        {
          guildId: GUILD_A,
          userId: ALICE.id,
          username: 'alice2',
          globalName: null,
          nickname: 'Ali',
          at: AT,
          position: liveOn(0),
        },
        {
          guildId: GUILD_A,
          userId: LEGACY.id,
          username: 'carol#1234',
          globalName: null,
          nickname: null,
          at: AT,
          position: liveOn(0),
        },
        {
          guildId: LARGE,
          userId: '700000000000000009',
          username: 'newcomer',
          globalName: null,
          nickname: null,
          at: AT,
          position: liveOn(1),
        },
      ]),
    );
  });

  it('reads the updates Discord replays after a RESUME', async () => {
    discord.startOutage();
    discord.changeMember(GUILD_A, BOB.id, { nick: 'Bobby' });
    await until(() => discord.connections.some((c) => !c.hello));
    discord.endOutage();
    await until(() => outbox.live.length === 1);
    expect(outbox.live[0]).toMatchObject({
      userId: BOB.id,
      nickname: 'Bobby',
      position: { shardId: 0, sessionId: discord.session(0)!.id, replayed: true },
    });
    expect(discord.session(0)!.resumes).toBe(1);
  });

  it('reads nothing more once stopped', async () => {
    stop();
    discord.changeMember(GUILD_A, BOB.id, { nick: 'Bobby' });
    discord.changeMember(GUILD_A, ALICE.id, { nick: 'Al' });
    // A sentinel the gateway itself hears: the updates before it were heard too.
    const seen = new Promise<void>((resolve) => {
      const off = gateway.gateway.onDispatch((packet) => {
        if (packet.t !== GatewayDispatchEvents.GuildMemberUpdate) return;
        if (packet.d.user.id !== ALICE.id) return;
        off();
        resolve();
      });
    });
    await seen;
    expect(outbox.live).toEqual([]);
  });
});

/** Each run's figures so far, by server id. */
function figures(runs: Set<ReconciliationRun>) {
  return [...runs]
    .map(({ guildId, members, changes }) => ({ guildId, members, changes }))
    .sort((a, b) => a.guildId.localeCompare(b.guildId));
}

/** Full views done: counted, and timed once each. */
async function reconciliations(metrics: DetectorMetrics) {
  const [count] = (await metrics.detectorReconciliations.get()).values;
  const timed = (await metrics.detectorReconciliationDuration.get()).values.find(
    (v) => v.metricName === 'name_history_detector_reconciliation_duration_seconds_count',
  );
  return { count: count?.value, timed: timed?.value };
}
