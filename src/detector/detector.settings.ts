import type { ConfigOf } from '../config/config-section.js';
import type { discordConfig } from './detector.config.js';

/** The detector's settings: injected with `@Inject(DETECTOR_SETTINGS)`. */
export const DETECTOR_SETTINGS = 'DETECTOR_SETTINGS';

export interface DetectorSettings {
  /** Unset: the detector is off. */
  token: string | undefined;
  /** Discord's REST API base (DISCORD_API_URL); unset: discord.js's default. */
  apiUrl: string | undefined;
  /** The gateway to connect to instead of the one GET /gateway/bot names (DISCORD_GATEWAY_URL). */
  gatewayUrl: string | undefined;
  /** False: this instance runs no shard (DETECTOR_ENABLED). */
  enabled: boolean;
  /** The total number of shards (DETECTOR_SHARD_COUNT); unset: Discord's recommendation. */
  shardCount: number | undefined;
  leaseMs: number;
  /** First delay after a failed login or a lost connection; doubles up to `loginRetryMaxMs`. */
  loginRetryMs: number;
  loginRetryMaxMs: number;
  /** Delay after Discord refused the login (bad token, intents not enabled): an operator must act. */
  refusedRetryMs: number;
  /** First delay before trying a batch of observations again; doubles up to `publishRetryMaxMs`. */
  publishRetryMs: number;
  publishRetryMaxMs: number;
  /**
   * Observations compared with the known names in one transaction: a batch costs seven round
   * trips whatever its size (the begin, the locks, the opt-outs, the lookup, the two inserts
   * and the commit), and a first sighting's batch of 2,500 holds the locks ~50 ms.
   */
  batchSize: number;
  /**
   * Batches compared at once (DETECTOR_COMPARE_CONCURRENCY), each of other users (CompareLane):
   * Postgres compares one while the process prepares the next.
   */
  compareConcurrency: number;
  /** Live updates waiting to be compared, past which a new one is dropped (and logged). */
  maxPending: number;
  /** Members of full views waiting to be compared, past which more are dropped (and logged). */
  maxReconciling: number;
  /** A server's member list is asked for only while fewer members than this wait. */
  reconcileBacklogLimit: number;
  /** How long a member request may go without a chunk before it counts as failed. */
  memberChunkTimeoutMs: number;
  /** Attempts at fetching one guild's members (rate limits aside) before moving on. */
  memberFetchAttempts: number;
}

export function detectorSettings(discord: ConfigOf<typeof discordConfig>): DetectorSettings {
  return {
    token: discord.token,
    apiUrl: discord.apiUrl,
    gatewayUrl: discord.gatewayUrl,
    enabled: discord.enabled,
    shardCount: discord.shardCount,
    leaseMs: discord.leaseMs,
    loginRetryMs: 5_000,
    loginRetryMaxMs: 300_000,
    refusedRetryMs: 900_000,
    publishRetryMs: 1_000,
    publishRetryMaxMs: 60_000,
    batchSize: 2_500,
    compareConcurrency: discord.compareConcurrency,
    maxPending: 10_000,
    maxReconciling: 1_000_000,
    reconcileBacklogLimit: 50_000,
    memberChunkTimeoutMs: 30_000,
    memberFetchAttempts: 3,
  };
}
