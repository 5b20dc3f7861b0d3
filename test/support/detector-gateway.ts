import { DiscordGateway } from '../../src/detector/discord-gateway.js';
import { TEST_DISCORD_TOKEN, type FakeDiscord } from './fake-discord.js';

/** What a gateway of the unit tests was told besides dispatches. */
export interface GatewayReports {
  closed: { code: number; shardId: number; forGood: boolean }[];
  warnings: string[];
}

/**
 * A DiscordGateway on `discord` (every shard GET /gateway/bot recommends), not connected
 * yet: `connectAll` logs it in and starts every shard; `stopAll` closes them.
 */
export function testGateway(discord: FakeDiscord) {
  const reports: GatewayReports = { closed: [], warnings: [] };
  const gateway = new DiscordGateway(
    {
      token: TEST_DISCORD_TOKEN,
      apiUrl: discord.apiUrl,
      gatewayUrl: undefined,
      shardCount: undefined,
    },
    {
      closed: (code, shardId, forGood) => reports.closed.push({ code, shardId, forGood }),
      started: () => undefined,
      warn: (message) => reports.warnings.push(message),
    },
  );
  return {
    gateway,
    reports,
    connectAll: async () => {
      await gateway.connectInfo();
      for (let shardId = 0; shardId < gateway.shardCount; shardId++) {
        await gateway.startShard(shardId);
      }
    },
    stopAll: () => gateway.stopAll({ resumable: false }),
  };
}
