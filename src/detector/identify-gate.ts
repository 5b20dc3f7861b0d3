/** Discord's identify window: `max_concurrency` identifies per this many ms, one per bucket. */
export const IDENTIFY_WINDOW_MS = 5_000;

/**
 * When a shard may IDENTIFY (start a new session): Discord allows one per 5 s per bucket
 * (`shard_id % max_concurrency`) and `session_start_limit.remaining` per day. A RESUME needs
 * no turn. `waitForIdentify` resolves once the shard may identify now, and rejects when
 * `signal` aborts first.
 */
export interface IdentifyGate {
  waitForIdentify(shardId: number, signal: AbortSignal): Promise<void>;
}

/** Resolves after `ms`, or rejects when `signal` aborts. */
export function abortableDelay(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason as Error);
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal.reason as Error);
    };
    signal.addEventListener('abort', onAbort, { once: true });
  });
}

/** The identify windows of one process (the embedded default, one instance). */
export class LocalIdentifyGate implements IdentifyGate {
  /** When each bucket may identify next (ms since the epoch). */
  private readonly nextAt = new Map<number, number>();

  constructor(private readonly maxConcurrency: number) {}

  async waitForIdentify(shardId: number, signal: AbortSignal): Promise<void> {
    const bucket = shardId % Math.max(1, this.maxConcurrency);
    for (;;) {
      const wait = (this.nextAt.get(bucket) ?? 0) - Date.now();
      if (wait <= 0) break;
      await abortableDelay(wait, signal);
    }
    this.nextAt.set(bucket, Date.now() + IDENTIFY_WINDOW_MS);
  }
}
