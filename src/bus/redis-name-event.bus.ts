import { Logger, OnModuleDestroy, OnModuleInit } from '@nestjs/common';
import type { Cluster, Redis } from 'ioredis';
import pLimit from 'p-limit';
import { Subject } from 'rxjs';
import { withTimeout } from '../common/with-timeout.js';
import type { BusMetrics } from './bus.metrics.js';
import type { StoredNameEvent } from '../name-events/index.js';
import type { RedisConnections } from '../redis/index.js';
import {
  BusSubscription,
  BusUnavailableError,
  NameEventBus,
  unavailable,
} from './name-event-bus.js';

/** What travels on the channel: the stored event and when its publish started. */
type BusMessage = StoredNameEvent & { publishedAt: number };

/** How often the subscriber connection, otherwise silent, asks Redis whether it is alive. */
const SUBSCRIBER_PING_MS = 2_000;

/**
 * Redis pub/sub between instances: classic (one server, or Sentinel's master: one publisher
 * connection and one subscriber connection per instance), or sharded on a cluster
 * (ShardedRedisNameEventBus, which overrides how the subscription is held). Either way: one
 * subscription per instance, shared by all its listeners and held only while one of them
 * holds it. Subscribe and unsubscribe run one after the other, so the last call wins. A
 * subscription that breaks is never mended behind its holders' backs: their streams fail, and
 * their clients resume from their Last-Event-ID, which the database fills.
 */
export class RedisNameEventBus extends NameEventBus implements OnModuleInit, OnModuleDestroy {
  readonly kind = 'redis';
  protected readonly logger = new Logger(this.constructor.name);
  protected readonly publisher: Redis | Cluster;
  protected readonly channel: string;
  /** PUBLISH, or SPUBLISH on a cluster. */
  private readonly command: 'publish' | 'spublish';
  /** The connection that holds the subscription (the sharded bus's: only while subscribed). */
  protected subscriber?: Redis;
  /**
   * The deliveries of the current subscription, while this instance holds one for its
   * listeners; undefined while unsubscribed.
   */
  protected live?: Subject<StoredNameEvent>;
  private holders = 0;
  /** Subscribe and unsubscribe, one at a time. */
  private readonly serially = pLimit(1);
  /**
   * While subscribed: a PING now and then, so a Redis that stopped answering is noticed (by
   * the response timeout) and the streams end, instead of waiting for events that never come.
   */
  private heartbeat?: NodeJS.Timeout;

  constructor(
    protected readonly redis: RedisConnections,
    private readonly metrics: BusMetrics,
  ) {
    super();
    this.publisher = redis.create('publisher');
    this.channel = redis.isCluster ? redis.slotKey('name-events') : redis.key('name-events');
    this.command = redis.isCluster ? 'spublish' : 'publish';
    // The sharded bus opens a connection of its own for each subscription.
    if (redis.isCluster) return;
    this.subscriber = redis.create('subscriber') as Redis;
    this.subscriber.on('message', (_channel: string, message: string) => this.onMessage(message));
    this.subscriber.on('close', () => this.onSubscriptionLost('Redis subscriber connection lost'));
  }

  /** Subscribes this instance's connection; rejects with BusUnavailableError. */
  protected async openSubscription(): Promise<void> {
    const subscriber = this.subscriber!;
    // Until the connection is ready (reconnecting, or still in its handshake), Redis is not
    // reachable yet: the listener gets its 500 at once rather than a stream that would end
    // when the handshake does.
    if (subscriber.status !== 'ready') {
      throw new BusUnavailableError(`Redis subscriber not ready (${subscriber.status})`);
    }
    await subscriber.subscribe(this.channel).catch(unavailable('Redis subscribe failed'));
  }

  /** Ends the subscription (best effort: it is no longer wanted). */
  protected async closeSubscription(): Promise<void> {
    if (this.subscriber?.status !== 'ready') return;
    await this.subscriber.unsubscribe(this.channel).catch(() => undefined);
  }

  async ping(): Promise<void> {
    await this.publisher.ping();
  }

  /**
   * One beat of the heartbeat, while subscribed; must not reject. A failed PING needs no
   * handling here: a timeout closes the connection, which ends the subscription.
   */
  protected async beat(): Promise<void> {
    await this.subscriber?.ping().catch(() => undefined);
  }

  /**
   * Sends the events in one pipeline (one command per event) and gives each command's count
   * of receivers; any failure, or no reply, is the bus being unavailable.
   */
  async publish(events: readonly StoredNameEvent[], publishedAt: number): Promise<number[]> {
    const pipeline = this.publisher.pipeline();
    for (const event of events) {
      const message: BusMessage = { ...event, publishedAt };
      pipeline[this.command](this.channel, JSON.stringify(message));
    }
    const results = await pipeline.exec().catch(unavailable('Redis publish failed'));
    if (!results) throw new BusUnavailableError('Redis publish failed: no reply');
    const failed = results.find(([error]) => error);
    if (failed) throw new BusUnavailableError(`Redis publish failed: ${failed[0]!.message}`);
    return results.map(([, receivers]) => receivers as number);
  }

  subscribe(): Promise<BusSubscription> {
    return this.serially(async () => {
      if (!this.live) {
        await this.openSubscription();
        this.live = new Subject();
        this.startHeartbeat();
      }
      return this.hold(this.live);
    });
  }

  /**
   * Start-up waits (briefly) for the connections, so the first requests do not meet a
   * connection still being opened. Redis down at start-up is not fatal: the service starts,
   * readiness says so, and ioredis keeps reconnecting.
   */
  async onModuleInit(): Promise<void> {
    const connections = this.subscriber ? [this.publisher, this.subscriber] : [this.publisher];
    try {
      await withTimeout(Promise.all(connections.map(ready)), 3_000);
    } catch {
      this.logger.error('Redis is not reachable yet; publishing and listening fail until it is');
    }
  }

  /**
   * A round trip on the subscriber connection: Redis answers a connection in order, so the
   * reply comes after every message it had already queued for this subscriber.
   */
  async flush(): Promise<void> {
    await this.subscriber?.ping().catch(unavailable('Redis subscriber did not answer'));
  }

  onModuleDestroy(): void {
    this.stopHeartbeat();
  }

  protected onMessage(message: string): void {
    if (!this.live) return;
    let parsed: BusMessage;
    try {
      parsed = JSON.parse(message) as BusMessage;
    } catch {
      this.logger.error(`Dropped a malformed bus message: ${message.slice(0, 200)}`);
      return;
    }
    const { publishedAt, ...event } = parsed;
    this.metrics.publishToDelivery.observe(Math.max(0, Date.now() - publishedAt) / 1000);
    this.live.next(event);
  }

  /** The subscription died: whoever was listening may have missed events. */
  protected onSubscriptionLost(reason: string): void {
    this.stopHeartbeat();
    const live = this.live;
    this.live = undefined;
    this.holders = 0;
    live?.error(new BusUnavailableError(reason));
  }

  private hold(live: Subject<StoredNameEvent>): BusSubscription {
    this.holders++;
    let held = true;
    return {
      deliveries$: live.asObservable(),
      release: () => {
        if (!held) return;
        held = false;
        // A subscription lost meanwhile has no holders left to count.
        if (live !== this.live) return;
        if (--this.holders === 0) void this.serially(() => this.unsubscribeIfUnheld());
      },
    };
  }

  private async unsubscribeIfUnheld(): Promise<void> {
    if (this.holders > 0 || !this.live) return;
    this.live.complete();
    this.live = undefined;
    this.stopHeartbeat();
    await this.closeSubscription();
  }

  private startHeartbeat(): void {
    this.heartbeat ??= setInterval(() => void this.beat(), SUBSCRIBER_PING_MS).unref();
  }

  private stopHeartbeat(): void {
    clearInterval(this.heartbeat);
    this.heartbeat = undefined;
  }
}

/**
 * The first outcome of a connection's first attempt: resolves when it is ready; rejects with
 * its first error, or when it ends first.
 */
export function ready(connection: Redis | Cluster): Promise<void> {
  if (connection.status === 'ready') return Promise.resolve();
  return new Promise((resolve, reject) => {
    connection.once('ready', () => resolve());
    connection.once('error', reject);
    connection.once('end', () => reject(new Error('the connection ended')));
  });
}
