import { Injectable, Logger, OnModuleDestroy, OnModuleInit } from '@nestjs/common';
import type { Redis } from 'ioredis';
import { Subject } from 'rxjs';
import { withTimeout } from '../common/with-timeout.js';
import { MetricsService } from '../metrics/metrics.service.js';
import type { StoredNameEvent } from '../name-events/name-event.types.js';
import { RedisConnections } from '../redis/redis-connections.js';
import {
  BusSubscription,
  BusUnavailableError,
  NameEventBus,
  NameEventDelivery,
} from './name-event-bus.js';

/** What travels on the channel: the stored event and when its publish started. */
type BusMessage = StoredNameEvent & { publishedAt: number };

/** How often the subscriber connection, otherwise silent, asks Redis whether it is alive. */
const SUBSCRIBER_PING_MS = 2_000;

/**
 * Redis pub/sub between instances: one publisher connection and one subscriber connection
 * per instance, the subscription shared by all its listeners and held only while one of them
 * holds it. Subscribe and unsubscribe run one after the other, so the last call wins.
 */
@Injectable()
export class RedisNameEventBus extends NameEventBus implements OnModuleInit, OnModuleDestroy {
  readonly kind = 'redis';
  private readonly logger = new Logger('RedisNameEventBus');
  private readonly publisher: Redis;
  private readonly subscriber: Redis;
  private readonly channel: string;
  /** The deliveries of the current subscription; undefined while unsubscribed. */
  private live?: Subject<NameEventDelivery>;
  private holders = 0;
  private operations: Promise<unknown> = Promise.resolve();
  /**
   * While subscribed: a PING now and then, so a Redis that stopped answering is noticed (by
   * the response timeout) and the streams end, instead of waiting for events that never come.
   */
  private heartbeat?: NodeJS.Timeout;

  constructor(
    redis: RedisConnections,
    private readonly metrics: MetricsService,
  ) {
    super();
    this.channel = redis.key('name-events');
    this.publisher = redis.create('publisher');
    this.subscriber = redis.create('subscriber');
    this.subscriber.on('message', (_channel: string, message: string) => this.onMessage(message));
    this.subscriber.on('close', () => this.onSubscriberLost());
  }

  async publish(events: readonly StoredNameEvent[], publishedAt: number): Promise<number[]> {
    const pipeline = this.publisher.pipeline();
    for (const event of events) {
      const message: BusMessage = { ...event, publishedAt };
      pipeline.publish(this.channel, JSON.stringify(message));
    }
    let results: [Error | null, unknown][] | null;
    try {
      results = await pipeline.exec();
    } catch (error) {
      throw new BusUnavailableError(`Redis publish failed: ${(error as Error).message}`);
    }
    const failed =
      results?.find(([error]) => error) ?? (results ? undefined : [new Error('no reply')]);
    if (failed) throw new BusUnavailableError(`Redis publish failed: ${failed[0]!.message}`);
    return results!.map(([, receivers]) => receivers as number);
  }

  subscribe(): Promise<BusSubscription> {
    return this.serially(async () => {
      if (!this.live) {
        // Until the connection is ready (reconnecting, or still in its handshake), Redis is
        // not reachable yet: the listener gets its 500 at once rather than a stream that
        // would end when the handshake does.
        if (this.subscriber.status !== 'ready') {
          throw new BusUnavailableError(`Redis subscriber not ready (${this.subscriber.status})`);
        }
        try {
          await this.subscriber.subscribe(this.channel);
        } catch (error) {
          throw new BusUnavailableError(`Redis subscribe failed: ${(error as Error).message}`);
        }
        this.live = new Subject();
        this.startHeartbeat();
      }
      return this.hold(this.live);
    });
  }

  /**
   * Start-up waits (briefly) for both connections, so the first requests do not meet a
   * connection still being opened. Redis down at start-up is not fatal: the service starts,
   * readiness says so, and ioredis keeps reconnecting.
   */
  async onModuleInit(): Promise<void> {
    // The first outcome of each connection's first attempt: ready, or an error.
    const settled = (connection: Redis) =>
      connection.status === 'ready'
        ? Promise.resolve()
        : new Promise<void>((resolve, reject) => {
            connection.once('ready', () => resolve());
            connection.once('error', reject);
          });
    try {
      await withTimeout(Promise.all([settled(this.publisher), settled(this.subscriber)]), 3_000);
    } catch {
      this.logger.error('Redis is not reachable yet; publishing and listening fail until it is');
    }
  }

  onModuleDestroy(): void {
    this.stopHeartbeat();
  }

  async ping(): Promise<void> {
    await this.publisher.ping();
  }

  /**
   * A round trip on the subscriber connection: Redis answers a connection in order, so the
   * reply comes after every message it had already queued for this subscriber.
   */
  async flush(): Promise<void> {
    try {
      await this.subscriber.ping();
    } catch (error) {
      throw new BusUnavailableError(`Redis subscriber did not answer: ${(error as Error).message}`);
    }
  }

  private hold(live: Subject<NameEventDelivery>): BusSubscription {
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
    if (this.subscriber.status !== 'ready') return;
    await this.subscriber.unsubscribe(this.channel).catch(() => undefined);
  }

  private startHeartbeat(): void {
    this.heartbeat ??= setInterval(() => {
      // A failed PING needs no handling here: a timeout closes the connection, and the
      // 'close' handler ends the subscription.
      this.subscriber.ping().catch(() => undefined);
    }, SUBSCRIBER_PING_MS).unref();
  }

  private stopHeartbeat(): void {
    clearInterval(this.heartbeat);
    this.heartbeat = undefined;
  }

  private serially<T>(operation: () => Promise<T>): Promise<T> {
    const result = this.operations.then(operation, operation);
    this.operations = result.catch(() => undefined);
    return result;
  }

  private onMessage(message: string): void {
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
    this.live.next({ event, publishedAt });
  }

  /** The subscription died with the connection: whoever was listening may have missed events. */
  private onSubscriberLost(): void {
    this.stopHeartbeat();
    const live = this.live;
    this.live = undefined;
    this.holders = 0;
    live?.error(new BusUnavailableError('Redis subscriber connection lost'));
  }
}
