import type { AppConfig } from '../config/configuration.js';

/** The detector's settings: injected with `@Inject(DETECTOR_SETTINGS)`. */
export const DETECTOR_SETTINGS = 'DETECTOR_SETTINGS';

export interface DetectorSettings {
  /** Unset: the detector is off. */
  token: string | undefined;
  leaseKey: string;
  leaseMs: number;
  /** First delay after a failed login or a lost connection; doubles up to `loginRetryMaxMs`. */
  loginRetryMs: number;
  loginRetryMaxMs: number;
  /** Delay after Discord refused the login (bad token, intents not enabled): an operator must act. */
  refusedRetryMs: number;
  /** First delay before publishing a detected change again; doubles up to `publishRetryMaxMs`. */
  publishRetryMs: number;
  publishRetryMaxMs: number;
  /** Detected changes waiting to be published, past which the oldest is dropped (and logged). */
  maxPending: number;
  /** How long a change is remembered so that the same change seen again is not emitted twice. */
  duplicateWindowMs: number;
  /** Attempts at fetching one guild's members (rate limits aside) before moving on. */
  memberFetchAttempts: number;
}

export function detectorSettings(
  discord: AppConfig['discord'],
  redis: Pick<AppConfig['redis'], 'keyPrefix'>,
): DetectorSettings {
  return {
    token: discord.token,
    leaseKey: `${redis.keyPrefix}:detector:lease`,
    leaseMs: discord.leaseMs,
    loginRetryMs: 5_000,
    loginRetryMaxMs: 300_000,
    refusedRetryMs: 900_000,
    publishRetryMs: 1_000,
    publishRetryMaxMs: 60_000,
    maxPending: 10_000,
    duplicateWindowMs: 10_000,
    memberFetchAttempts: 3,
  };
}
