import { defineConfig, Variable } from '../config/config-section.js';
import { IsIntegerBetween } from '../config/transforms.js';

export class SseVariables {
  @Variable('keep-alive comment interval')
  @IsIntegerBetween(1000, 3_600_000)
  SSE_KEEPALIVE_MS: number = 15_000;

  @Variable('how many of the newest stored events a reconnect can replay')
  @IsIntegerBetween(0, 1_000_000)
  SSE_REPLAY_LIMIT: number = 10_000;

  @Variable('replays reading their next page at once, per instance; the others wait their turn')
  @IsIntegerBetween(1, 10_000)
  SSE_REPLAY_CONCURRENCY: number = 8;

  @Variable('a replaying listener that takes nothing for this long is cut off')
  @IsIntegerBetween(1000, 3_600_000)
  SSE_REPLAY_STALL_MS: number = 10_000;

  @Variable('the `retry:` reconnect delay suggested to clients')
  @IsIntegerBetween(0, 3_600_000)
  SSE_RETRY_MS: number = 3_000;

  @Variable('unsent bytes after which a listener that stopped reading is cut off')
  @IsIntegerBetween(16 * 1024, 256 * 1024 * 1024)
  SSE_BUFFER_LIMIT_BYTES: number = 1024 * 1024;

  @Variable('listeners per instance; past it, 503')
  @IsIntegerBetween(1, 1_000_000)
  SSE_MAX_LISTENERS: number = 50_000;

  @Variable('listeners per client address (an IPv6 /64) per instance; past it, 429')
  @IsIntegerBetween(1, 1_000_000)
  SSE_MAX_LISTENERS_PER_ADDRESS: number = 1_000;
}

/** The stream: keep-alives, replay, the retry hint, the slow-listener bound, the caps. */
export const sseConfig = defineConfig({
  namespace: 'sse',
  description:
    'The stream: keep-alives, replay, the retry hint, the slow-listener bound, the caps.',
  variables: SseVariables,
  build: (env) => ({
    keepAliveMs: env.SSE_KEEPALIVE_MS,
    replayLimit: env.SSE_REPLAY_LIMIT,
    replayConcurrency: env.SSE_REPLAY_CONCURRENCY,
    replayStallMs: env.SSE_REPLAY_STALL_MS,
    retryMs: env.SSE_RETRY_MS,
    bufferLimitBytes: env.SSE_BUFFER_LIMIT_BYTES,
    maxListeners: env.SSE_MAX_LISTENERS,
    maxListenersPerAddress: env.SSE_MAX_LISTENERS_PER_ADDRESS,
  }),
});
