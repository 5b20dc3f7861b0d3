import { IsBoolean, IsOptional, IsString, Matches, MinLength } from 'class-validator';
import { defineConfig, Variable } from '../config/config-section.js';
import { IsIntegerBetween, ToBoolean } from '../config/transforms.js';
import { USER_PARTITIONS } from '../name-events/index.js';

export class DiscordVariables {
  @Variable('Discord bot token for the detector', { default: 'unset: detector off', secret: true })
  @IsOptional()
  @IsString()
  @MinLength(20, { message: 'must be a Discord bot token' })
  DISCORD_TOKEN?: string;

  @Variable('`false`: this instance runs no shard of the detector (the others share them)')
  @IsOptional()
  @ToBoolean()
  @IsBoolean()
  DETECTOR_ENABLED: boolean = true;

  @Variable('the total number of gateway shards, shared by every instance', {
    default: 'unset: the count Discord recommends in `GET /gateway/bot`',
  })
  @IsIntegerBetween(1, 100_000)
  DETECTOR_SHARD_COUNT?: number;

  @Variable("a shard's lease in Redis: how soon another instance takes a dead one's shards over")
  @IsIntegerBetween(1000, 600_000)
  DETECTOR_LEASE_MS: number = 30_000;

  @Variable(
    'batches of members compared with the known names at once, each on a Postgres connection of its own',
  )
  @IsIntegerBetween(1, USER_PARTITIONS)
  DETECTOR_COMPARE_CONCURRENCY: number = 4;

  @Variable("Discord's REST API base, for a REST proxy", {
    default: 'unset: `https://discord.com/api`',
    secret: true,
  })
  @IsOptional()
  @Matches(/^https?:\/\/[^\s/?#]+(\/[^\s?#]*)?$/, {
    message: 'must be an http:// or https:// URL without query or fragment',
  })
  DISCORD_API_URL?: string;

  @Variable('the gateway to connect to instead, for a gateway proxy', {
    default: 'unset: from `GET /gateway/bot`',
    secret: true,
  })
  @IsOptional()
  @Matches(/^wss?:\/\/[^\s/?#]+(\/[^\s?#]*)?$/, {
    message: 'must be a ws:// or wss:// URL without query or fragment',
  })
  DISCORD_GATEWAY_URL?: string;
}

/** The Discord detector: on when DISCORD_TOKEN is set. */
export const discordConfig = defineConfig({
  namespace: 'discord',
  description: 'The Discord detector: on when DISCORD_TOKEN is set.',
  variables: DiscordVariables,
  build: (env) => ({
    /** Unset: the detector is off. */
    token: env.DISCORD_TOKEN,
    /** False: this instance runs no shard. */
    enabled: env.DETECTOR_ENABLED,
    /** Unset: Discord's recommendation. */
    shardCount: env.DETECTOR_SHARD_COUNT,
    leaseMs: env.DETECTOR_LEASE_MS,
    /**
     * Batches compared at once, each of other users (CompareLane): Postgres compares one while
     * the process prepares the next.
     */
    compareConcurrency: env.DETECTOR_COMPARE_CONCURRENCY,
    /** Discord's REST API base, without a trailing slash; unset: Discord's. */
    apiUrl: env.DISCORD_API_URL?.replace(/\/+$/, ''),
    /** The gateway to connect to instead of the one GET /gateway/bot names. */
    gatewayUrl: env.DISCORD_GATEWAY_URL,
  }),
});
