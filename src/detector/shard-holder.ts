import { Logger } from '@nestjs/common';
import type { DetectorMetrics } from './detector.metrics.js';
import type { Lease, Leases } from '../redis/index.js';
import type { DetectorInstances } from './detector-instances.js';
import type { DiscordGateway } from './discord-gateway.js';
import { planShards } from './shard-plan.js';

export const shardLease = (shardId: number) => `detector-shard:${shardId}`;

/** Why a shard is let go of, as counted in the metrics. */
type Handover = 'rebalance' | 'stop' | 'lost' | 'failed';

/**
 * Which shards this instance runs: a lease per shard (the shared `Leases`), and a heartbeat
 * every third of the lease (at most 2 s) that announces this instance in Redis and follows
 * `planShards` (take free shards, hand one over). A shard is started only under its lease,
 * and its lease released only once its connection is closed (a handover closes it keeping
 * the session resumable, for the next holder to resume): a shard is never connected twice.
 * A lease lost (not renewed in time) stops its shard at once.
 */
export class ShardHolder {
  private readonly logger = new Logger('DiscordDetector');
  private readonly held = new Map<number, Lease>();
  private timer?: NodeJS.Timeout;
  private tick: Promise<void> = Promise.resolve();
  private running = false;
  private cooldownUntil = 0;
  /** Instances running the detector, as of the last heartbeat. */
  liveInstances = 0;

  constructor(
    private readonly gateway: DiscordGateway,
    private readonly leases: Leases,
    private readonly instances: DetectorInstances,
    private readonly token: string,
    private readonly leaseMs: number,
    private readonly metrics: DetectorMetrics,
  ) {}

  private get everyMs(): number {
    return Math.max(100, Math.min(2_000, Math.floor(this.leaseMs / 3)));
  }

  /** The shards held now. */
  get shardIds(): number[] {
    return [...this.held.keys()].sort((a, b) => a - b);
  }

  start(): void {
    this.running = true;
    this.schedule(0);
  }

  /** Lets every shard go (sessions kept resumable unless `resumable` is false), and leaves. */
  async stop({ resumable }: { resumable: boolean }): Promise<void> {
    this.running = false;
    clearTimeout(this.timer);
    await this.tick;
    await Promise.all(this.shardIds.map((id) => this.letGo(id, 'stop', resumable)));
    await this.instances.leave(this.token).catch((error: Error) => {
      this.logger.warn(`Could not leave the detector instances: ${error.message}`);
    });
  }

  private schedule(ms: number): void {
    clearTimeout(this.timer);
    if (!this.running) return;
    this.timer = setTimeout(() => {
      this.tick = this.heartbeat()
        .catch((error: Error) => this.logger.warn(`Detector heartbeat failed: ${error.message}`))
        .finally(() => this.schedule(this.everyMs));
    }, ms);
  }

  private async heartbeat(): Promise<void> {
    const live = await this.instances.heartbeat(this.token, this.held.size, this.leaseMs);
    this.liveInstances = live.length;
    if (!this.running) return;
    const self = live.find((i) => i.token === this.token);
    const plan = planShards({
      shardCount: this.gateway.shardCount,
      self: this.token,
      held: this.held.size,
      live,
      settleMs: this.leaseMs,
      coolingDown: Date.now() < this.cooldownUntil,
    });
    if (plan.release > 0) {
      const shardId = this.shardIds.at(-1)!;
      this.cooldownUntil = Date.now() + this.leaseMs;
      this.logger.log(
        `Handing shard ${shardId} over to even out the shards over ${live.length} instance(s)`,
      );
      await this.letGo(shardId, 'rebalance', true);
      return;
    }
    // Not before a second heartbeat, so instances that start together see each other.
    if (plan.take === 0 || (self?.ageMs ?? 0) < this.everyMs) return;
    await this.takeFree(plan.take);
  }

  /** Tries the shards not held here, from a place of its own, until `count` are taken. */
  private async takeFree(count: number): Promise<void> {
    const total = this.gateway.shardCount;
    const offset = Math.floor(Math.random() * total);
    let taken = 0;
    for (let i = 0; i < total && taken < count && this.running; i++) {
      const shardId = (offset + i) % total;
      if (this.held.has(shardId)) continue;
      const attempt = await this.leases.tryAcquire(shardLease(shardId), this.leaseMs);
      if (!attempt.lease) continue;
      if (!this.running) {
        await attempt.lease.release();
        return;
      }
      taken += 1;
      this.hold(shardId, attempt.lease);
    }
  }

  private hold(shardId: number, lease: Lease): void {
    this.held.set(shardId, lease);
    this.metrics.detectorShardsHeld.set(this.held.size);
    lease.signal.addEventListener(
      'abort',
      () => {
        this.logger.warn(`Lost the lease of shard ${shardId}: stopping it`);
        // Closed resumable: the next holder may resume; its session is not written over.
        void this.letGo(shardId, 'lost', true);
      },
      { once: true },
    );
    this.logger.log(`Running shard ${shardId} of ${this.gateway.shardCount}`);
    void this.gateway.startShard(shardId).catch((error: Error) => {
      // Its lease goes back, for this instance or another to try again at a next heartbeat.
      this.logger.warn(`Could not start shard ${shardId}: ${error.message}; letting it go`);
      if (this.held.get(shardId) === lease) void this.letGo(shardId, 'failed', true);
    });
  }

  /** Closes the shard's connection, then releases its lease. */
  private async letGo(shardId: number, reason: Handover, resumable: boolean): Promise<void> {
    const lease = this.held.get(shardId);
    if (!lease) return;
    this.held.delete(shardId);
    this.metrics.detectorShardsHeld.set(this.held.size);
    this.metrics.detectorHandovers.inc({ reason });
    await this.gateway.stopShard(shardId, { resumable }).catch((error: Error) => {
      this.logger.warn(`Shard ${shardId} did not close cleanly: ${error.message}`);
    });
    await lease.release();
  }
}
