import { afterEach, describe, expect, it, jest } from '@jest/globals';
import { Logger } from '@nestjs/common';
import { GatewayDispatchEvents, GatewayOpcodes } from 'discord.js';
import { testGateway } from '../../test/support/detector-gateway.js';
import {
  apiMember,
  apiUser,
  FakeDiscord,
  manyMembers,
  TEST_DISCORD_TOKEN,
  type FakeDiscordOptions,
} from '../../test/support/fake-discord.js';
import type { DetectorOutbox } from './detector-outbox.js';
import { detectorSettings } from './detector.settings.js';
import { MemberListRequester } from './member-list-requester.js';

const SMALL = '800000000000000001';
const LARGE_A = '800000000000000002';
const LARGE_B = '800000000000000003';
const TALKER = apiUser('700000000000000001', 'talker');

async function until(condition: () => boolean, timeoutMs = 5_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`Condition not met within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

/** The outbox as the requester sees it: room for more members, or not yet. */
class RoomGate {
  private open = true;
  private waiting: (() => void)[] = [];
  readonly asked: number[] = [];

  close(): void {
    this.open = false;
  }

  release(): void {
    this.open = true;
    for (const resolve of this.waiting.splice(0)) resolve();
  }

  whenReconcilingBelow(limit: number): Promise<void> {
    this.asked.push(limit);
    return this.open ? Promise.resolve() : new Promise((resolve) => this.waiting.push(resolve));
  }

  /** A live update of `guildId` dropped past the outbox's bound. */
  private dropped?: (guildId: string) => void;
  drop(guildId: string): void {
    this.dropped?.(guildId);
  }
  onLiveDropped(listener: (guildId: string) => void): () => void {
    this.dropped = listener;
    return () => (this.dropped = undefined);
  }
}

describe('MemberListRequester on the gateway connections, over the gateway protocol', () => {
  let discord: FakeDiscord;
  let gateway: ReturnType<typeof testGateway>;
  let stop: () => void;
  let logs: string[];
  let room: RoomGate;

  async function connect(world: FakeDiscordOptions, beforeLogin?: () => void): Promise<void> {
    logs = [];
    jest.spyOn(Logger.prototype, 'log').mockImplementation((message: unknown) => {
      logs.push(String(message));
    });
    discord = await FakeDiscord.start(world);
    const settings = detectorSettings({
      token: TEST_DISCORD_TOKEN,
      enabled: true,
      shardCount: undefined,
      leaseMs: 30_000,
      compareConcurrency: 1,
      apiUrl: discord.apiUrl,
      gatewayUrl: undefined,
    });
    gateway = testGateway(discord);
    room = new RoomGate();
    beforeLogin?.();
    stop = new MemberListRequester(settings, room as unknown as DetectorOutbox).watch(
      gateway.gateway,
    );
    await gateway.connectAll();
  }

  afterEach(async () => {
    stop();
    await gateway.stopAll();
    await discord.close();
    jest.restoreAllMocks();
  });

  it('asks for the members of each server whose GUILD_CREATE left some out, one at a time per shard', async () => {
    await connect({
      shardCount: 2,
      guilds: [
        { id: SMALL, shardId: 1, members: [apiMember(TALKER)] },
        { id: LARGE_A, members: manyMembers(2_500, 710000000000000000n, 'a') },
        { id: LARGE_B, members: manyMembers(60, 720000000000000000n, 'b') },
      ],
    });
    await until(() => logs.length === 2);
    const requests = discord.memberRequests;
    expect(requests.map(({ guildId, answer }) => ({ guildId, answer }))).toEqual(
      expect.arrayContaining([
        { guildId: LARGE_A, answer: 'members' },
        { guildId: LARGE_B, answer: 'members' },
      ]),
    );
    expect(requests).toHaveLength(2);
    expect(requests[1].at).toBeGreaterThanOrEqual(requests[0].answeredAt!);
    expect(logs).toEqual(
      expect.arrayContaining([
        `Received the 2501 members of server ${LARGE_A}`,
        `Received the 61 members of server ${LARGE_B}`,
      ]),
    );
    expect(room.asked).toEqual([50_000, 50_000]);
    expect(discord.breaches).toEqual([]);
  });

  it('asks again when a server comes back, waiting out RATE_LIMITED before asking once more', async () => {
    await connect({
      memberRequestWindowMs: 400,
      guilds: [{ id: LARGE_A, members: manyMembers(60, 710000000000000000n, 'a') }],
    });
    await until(() => logs.length === 1);
    discord.guildOutage(LARGE_A)();
    await until(() => discord.memberRequests.length === 3 && logs.length === 3);
    const [first, limited, again] = discord.memberRequests;
    expect([first, limited, again].map((r) => r.answer)).toEqual([
      'members',
      'rate-limited',
      'members',
    ]);
    expect(again.at).toBeGreaterThanOrEqual(first.at + 400);
    expect(logs[1]).toMatch(
      new RegExp(`^Member request for server ${LARGE_A} rate-limited; asking again in \\d+ ms$`),
    );
    expect(discord.breaches).toEqual([]);
  });

  it('asks for a server joined later, and only while few enough members wait', async () => {
    await connect({ guilds: [{ id: SMALL, members: [apiMember(TALKER)] }] });
    room.close();
    discord.joinGuild({ id: LARGE_A, members: manyMembers(60, 710000000000000000n, 'a') });
    await until(() => room.asked.length === 1);
    expect(discord.memberRequests).toEqual([]);
    room.release();
    await until(() => discord.memberRequests.some((r) => r.answeredAt));
    expect(discord.memberRequests.map((r) => r.guildId)).toEqual([LARGE_A]);
  });

  it('asks again for the members of a server one of whose live updates was dropped', async () => {
    await connect({
      shardCount: 2,
      guilds: [
        { id: SMALL, shardId: 1, members: [apiMember(TALKER)] },
        { id: LARGE_A, members: manyMembers(60, 710000000000000000n, 'a') },
      ],
    });
    await until(() => logs.length === 1);
    // Its GUILD_CREATE carried every member: never asked for, until an update of it is lost.
    room.drop(SMALL);
    room.drop('800000000000000099'); // not a server of these shards: nothing to ask
    await until(() => logs.length === 2);
    expect(discord.memberRequests.map(({ guildId, answer }) => ({ guildId, answer }))).toEqual([
      { guildId: LARGE_A, answer: 'members' },
      { guildId: SMALL, answer: 'members' },
    ]);
    expect(logs[1]).toBe(`Received the 2 members of server ${SMALL}`);
  });

  it('asks nothing once stopped', async () => {
    await connect({ guilds: [{ id: SMALL, members: [apiMember(TALKER)] }] });
    stop();
    discord.joinGuild({ id: LARGE_A, members: manyMembers(60, 710000000000000000n, 'a') });
    // A request of the test's own, once the GUILD_CREATE is heard, answered over the network:
    // a request the requester had started on the GUILD_CREATE would have been sent before it.
    await new Promise<void>((resolve) => {
      const off = gateway.gateway.onDispatch((packet) => {
        if (packet.t !== GatewayDispatchEvents.GuildCreate || packet.d.id !== LARGE_A) return;
        off();
        resolve();
      });
    });
    await gateway.gateway.send(0, {
      op: GatewayOpcodes.RequestGuildMembers,
      d: { guild_id: SMALL, query: '', limit: 0, nonce: 'own' },
    });
    await until(() => discord.memberRequests.some((r) => r.answeredAt));
    expect(discord.memberRequests.map((r) => r.guildId)).toEqual([SMALL]);
  });
});
