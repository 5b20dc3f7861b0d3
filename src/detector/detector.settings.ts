import type { ConfigOf } from '../config/config-section.js';
import type { discordConfig } from './detector.config.js';

/** The detector's settings: injected with `@Inject(DETECTOR_SETTINGS)`. */
export const DETECTOR_SETTINGS = 'DETECTOR_SETTINGS';

/** DISCORD_TOKEN and the DETECTOR_* variables (`discordConfig`), and the detector's fixed settings. */
export type DetectorSettings = ReturnType<typeof detectorSettings>;

export function detectorSettings(discord: ConfigOf<typeof discordConfig>) {
  return {
    ...discord,
    /** First delay after a failed login or a lost connection; doubles up to `loginRetryMaxMs`. */
    loginRetryMs: 5_000,
    loginRetryMaxMs: 300_000,
    /** Delay after Discord refused the login (bad token, intents not enabled): an operator must act. */
    refusedRetryMs: 900_000,
    /** First delay before trying a batch of observations again; doubles up to `publishRetryMaxMs`. */
    publishRetryMs: 1_000,
    publishRetryMaxMs: 60_000,
    /**
     * Observations compared with the known names in one transaction: a batch costs seven round
     * trips whatever its size (the begin, the locks, the opt-outs, the lookup, the two inserts
     * and the commit), and a first sighting's batch of 2,500 holds the locks ~50 ms.
     */
    batchSize: 2_500,
    /** Live updates waiting to be compared, past which a new one is dropped (and logged). */
    maxPending: 10_000,
    /** Members of full views waiting to be compared, past which more are dropped (and logged). */
    maxReconciling: 1_000_000,
    /** A server's member list is asked for only while fewer members than this wait. */
    reconcileBacklogLimit: 50_000,
    /** How long a member request may go without a chunk before it counts as failed. */
    memberChunkTimeoutMs: 30_000,
    /** Attempts at fetching one guild's members (rate limits aside) before moving on. */
    memberFetchAttempts: 3,
  };
}
