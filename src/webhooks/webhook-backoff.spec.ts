import { describe, expect, it } from '@jest/globals';
import { parseDiscordRetryAfter, parseRetryAfter, retryDelayMs } from './webhook-backoff.js';

describe('webhook back-off', () => {
  it('waits min(2^(n-1) s, 10 min), ±20 %', () => {
    expect(retryDelayMs(1, undefined, () => 0.5)).toBe(1_000);
    expect(retryDelayMs(1, undefined, () => 0)).toBe(800);
    expect(retryDelayMs(1, undefined, () => 1)).toBe(1_200);
    expect(retryDelayMs(4, undefined, () => 0.5)).toBe(8_000);
    expect(retryDelayMs(11, undefined, () => 0.5)).toBe(600_000);
    expect(retryDelayMs(60, undefined, () => 1)).toBe(720_000);
  });

  it("takes the receiver's wait instead when it gave one", () => {
    expect(retryDelayMs(5, 250, () => 1)).toBe(250);
    expect(parseRetryAfter('3', 0)).toBe(3_000);
    expect(parseRetryAfter('Wed, 21 Oct 2015 07:28:00 GMT', Date.UTC(2015, 9, 21, 7, 27, 0))).toBe(
      60_000,
    );
    expect(parseRetryAfter('soon', 0)).toBeUndefined();
    expect(parseRetryAfter(undefined, 0)).toBeUndefined();
    expect(parseDiscordRetryAfter('{"retry_after": 1.5, "global": false}')).toBe(1_500);
    expect(parseDiscordRetryAfter('{"retry_after": "1"}')).toBeUndefined();
    expect(parseDiscordRetryAfter('not json')).toBeUndefined();
  });
});
