import { setTimeout as delay } from 'node:timers/promises';

/** The first retry waits 1 s, each next one twice as long, up to 10 minutes; ±20 %. */
const FIRST_RETRY_MS = 1_000;
const MAX_BACKOFF_MS = 600_000;
const JITTER = 0.2;
/** A receiver's own wait is honoured up to a day (a timer cannot wait much longer anyway). */
const MAX_RETRY_AFTER_MS = 86_400_000;

/**
 * How long to wait before the `failures`-th retry (1 for the first): the receiver's own
 * wait when it gave one (Retry-After, Discord's retry_after), else min(2^(n−1) s, 10 min)
 * with ±20 % jitter, so that senders that failed together do not retry together.
 */
export function retryDelayMs(
  failures: number,
  retryAfterMs: number | undefined,
  random: () => number = Math.random,
): number {
  if (retryAfterMs !== undefined) return Math.min(Math.max(0, retryAfterMs), MAX_RETRY_AFTER_MS);
  const base = Math.min(FIRST_RETRY_MS * 2 ** Math.max(0, failures - 1), MAX_BACKOFF_MS);
  return Math.round(base * (1 - JITTER + 2 * JITTER * random()));
}

/** A `Retry-After` header (seconds, or an HTTP date) in ms from `now`; undefined if absent or bad. */
export function parseRetryAfter(header: string | undefined, now: number): number | undefined {
  if (header === undefined) return undefined;
  const value = header.trim();
  if (/^\d+(\.\d+)?$/.test(value)) return Math.ceil(Number(value) * 1000);
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : Math.max(0, date - now);
}

/** Discord's `retry_after` (seconds, in a JSON body) in ms; undefined if absent or bad. */
export function parseDiscordRetryAfter(body: string): number | undefined {
  try {
    const parsed = JSON.parse(body) as { retry_after?: unknown } | null;
    const seconds = parsed?.retry_after;
    return typeof seconds === 'number' && Number.isFinite(seconds) && seconds >= 0
      ? Math.ceil(seconds * 1000)
      : undefined;
  } catch {
    return undefined;
  }
}

/** Waits `ms`, or less when `signal` aborts; never rejects. */
export function pause(ms: number, signal: AbortSignal): Promise<void> {
  return delay(ms, undefined, { signal }).catch(() => undefined);
}
