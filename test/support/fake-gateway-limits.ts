import type { GatewayConnection } from './fake-gateway-session.js';

/** Discord's identify window: `max_concurrency` IDENTIFYs per this many ms. */
export const IDENTIFY_WINDOW_MS = 5_000;

/**
 * Discord's identify limit: one IDENTIFY per 5 s per bucket (`shard_id % max_concurrency`).
 * The breach, in words, when `connection`'s IDENTIFY of `shardId` came sooner.
 */
export function identifiedTooSoon(
  identifies: readonly GatewayConnection[],
  connection: GatewayConnection,
  shardId: number,
  maxConcurrency: number,
): string | undefined {
  const bucket = shardId % maxConcurrency;
  const now = Date.now();
  const sooner = identifies.find(
    (c) =>
      c !== connection &&
      c.shardId !== undefined &&
      c.shardId % maxConcurrency === bucket &&
      now - c.authenticatedAt! < IDENTIFY_WINDOW_MS,
  );
  if (!sooner) return undefined;
  return (
    `IDENTIFY of shard ${shardId} ${now - sooner.authenticatedAt!} ms after shard ` +
    `${sooner.shardId}'s in bucket ${bucket} (max_concurrency ${maxConcurrency})`
  );
}

/** The breach when another connection still carries `shardId` as `connection` takes it. */
export function connectedTwice(
  connections: readonly GatewayConnection[],
  connection: GatewayConnection,
  shardId: number,
): string | undefined {
  const other = connections.find(
    (c) => c !== connection && c.shardId === shardId && c.closedAt === undefined,
  );
  return other ? `shard ${shardId} connected twice at the same moment` : undefined;
}
