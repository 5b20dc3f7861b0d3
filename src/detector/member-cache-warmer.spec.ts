import { afterEach, beforeEach, describe, expect, it, jest } from '@jest/globals';
import { Logger } from '@nestjs/common';
import { Events, type Client, type GuildMember, type PartialGuildMember } from 'discord.js';
import {
  apiMember,
  apiUser,
  FakeDiscordGateway,
  TEST_DISCORD_TOKEN,
  type FakeGatewayOptions,
} from '../../test/support/discord-gateway.js';
import { detectorSettings } from './detector.settings.js';
import { DiscordClientFactory } from './discord-client.factory.js';
import { MemberCacheWarmer } from './member-cache-warmer.js';

const GUILD_A = '800000000000000001';
const GUILD_B = '800000000000000002';
const GUILD_C = '800000000000000003';
const TALKER = apiUser('700000000000000001', 'talker');
const QUIET = apiUser('700000000000000002', 'quiet');

async function until(condition: () => boolean, timeoutMs = 3_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`Condition not met within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

describe('MemberCacheWarmer on a real discord.js client', () => {
  let client: Client;
  let gateway: FakeDiscordGateway;
  let stop: () => void;
  let logs: string[];

  async function connect(world: FakeGatewayOptions): Promise<void> {
    client = new DiscordClientFactory().create();
    gateway = new FakeDiscordGateway(client, world);
    const settings = detectorSettings(
      { token: TEST_DISCORD_TOKEN, leaseMs: 30_000 },
      { keyPrefix: 'test' },
    );
    stop = new MemberCacheWarmer(settings).watch(client);
    await client.login(TEST_DISCORD_TOKEN);
    await gateway.ready;
  }

  beforeEach(() => {
    logs = [];
    jest.spyOn(Logger.prototype, 'log').mockImplementation((message: unknown) => {
      logs.push(String(message));
    });
  });

  afterEach(async () => {
    stop();
    await client.destroy();
    jest.restoreAllMocks();
  });

  it('fetches the members GUILD_CREATE left out, one guild at a time, so their changes are seen', async () => {
    await connect({
      shardCount: 2,
      guilds: [
        {
          id: GUILD_A,
          shardId: 0,
          members: [apiMember(TALKER), apiMember(QUIET, { nick: 'Shy' })],
          inGuildCreate: [TALKER.id],
        },
        { id: GUILD_B, shardId: 1, members: [apiMember(QUIET)], inGuildCreate: [] },
        { id: GUILD_C, shardId: 1, members: [apiMember(TALKER)] }, // complete: not asked
      ],
    });
    expect(client.guilds.cache.get(GUILD_A)!.members.cache.has(QUIET.id)).toBe(false);
    await until(() => gateway.memberRequests.filter((r) => r.answeredAt).length === 2);
    await until(() => logs.length === 2);
    const [first, second] = gateway.memberRequests;
    expect(
      gateway.memberRequests.map(({ guildId, shardId, answer }) => ({ guildId, shardId, answer })),
    ).toEqual([
      { guildId: GUILD_A, shardId: 0, answer: 'members' },
      { guildId: GUILD_B, shardId: 1, answer: 'members' },
    ]);
    expect(second.at).toBeGreaterThanOrEqual(first.answeredAt!);
    expect(logs).toEqual([
      `Cached 3 members of server ${GUILD_A}`,
      `Cached 2 members of server ${GUILD_B}`,
    ]);

    const updates: [string | null, string | null][] = [];
    client.on(Events.GuildMemberUpdate, (old: GuildMember | PartialGuildMember, now: GuildMember) =>
      updates.push([old.nickname, now.nickname]),
    );
    gateway.memberUpdate(GUILD_A, apiMember(QUIET, { nick: 'Bold' }));
    expect(updates).toEqual([['Shy', 'Bold']]);
  });

  it('asks a rate-limited guild again once retry_after has passed, before the next guild', async () => {
    await connect({
      rateLimitedMemberRequests: 1,
      retryAfterSeconds: 0.2,
      guilds: [
        { id: GUILD_A, members: [apiMember(TALKER), apiMember(QUIET)], inGuildCreate: [] },
        { id: GUILD_B, members: [apiMember(QUIET)], inGuildCreate: [] },
      ],
    });
    await until(() => gateway.memberRequests.filter((r) => r.answeredAt).length === 3);
    const requests = gateway.memberRequests;
    expect(requests.map(({ guildId, answer }) => ({ guildId, answer }))).toEqual([
      { guildId: GUILD_A, answer: 'rate-limited' },
      { guildId: GUILD_A, answer: 'members' },
      { guildId: GUILD_B, answer: 'members' },
    ]);
    expect(requests[1].at - requests[0].answeredAt!).toBeGreaterThanOrEqual(200);
    expect(requests[2].at).toBeGreaterThanOrEqual(requests[1].answeredAt!);
    await until(() => logs.length === 3);
    expect(logs).toEqual([
      `Member request for server ${GUILD_A} rate-limited; asking again in 200 ms`,
      `Cached 3 members of server ${GUILD_A}`,
      `Cached 2 members of server ${GUILD_B}`,
    ]);
    expect(client.guilds.cache.get(GUILD_A)!.members.cache.size).toBe(3);
  });

  it('fetches the members of a guild joined after ready', async () => {
    await connect({ guilds: [{ id: GUILD_A, members: [apiMember(TALKER)] }] });
    gateway.guildCreate({ id: GUILD_B, members: [apiMember(QUIET)], inGuildCreate: [] });
    await until(() => gateway.memberRequests.some((r) => r.answeredAt));
    expect(gateway.memberRequests.map((r) => r.guildId)).toEqual([GUILD_B]);
    await until(() => client.guilds.cache.get(GUILD_B)!.members.cache.has(QUIET.id));
  });

  it('asks nothing more once stopped', async () => {
    await connect({ guilds: [{ id: GUILD_A, members: [apiMember(TALKER)] }] });
    stop();
    gateway.guildCreate({ id: GUILD_B, members: [apiMember(QUIET)], inGuildCreate: [] });
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(gateway.memberRequests).toEqual([]);
  });
});
