import { Injectable, OnModuleInit } from '@nestjs/common';
import type { Redis } from 'ioredis';
import { withTimeout } from '../common/with-timeout.js';
import type { BusMetrics } from './bus.metrics.js';
import type { StoredNameEvent } from '../name-events/index.js';
import { RedisConnections } from '../redis/index.js';
import { BusUnavailableError } from './name-event-bus.js';
import { RedisPubSubBus } from './redis-pub-sub.bus.js';

/**
 * Classic Redis pub/sub between instances (one server, or Sentinel's master): one publisher
 * connection and one subscriber connection per instance.
 */
@Injectable()
export class RedisNameEventBus extends RedisPubSubBus implements OnModuleInit {
  private readonly publisher: Redis;
  private readonly subscriber: Redis;
  private readonly channel: string;

  constructor(redis: RedisConnections, metrics: BusMetrics) {
    super(metrics, 'RedisNameEventBus');
    this.channel = redis.key('name-events');
    this.publisher = redis.create('publisher') as Redis;
    this.subscriber = redis.create('subscriber') as Redis;
    this.subscriber.on('message', (_channel: string, message: string) => this.onMessage(message));
    this.subscriber.on('close', () => this.onSubscriptionLost('Redis subscriber connection lost'));
  }

  async publish(events: readonly StoredNameEvent[], publishedAt: number): Promise<number[]> {
    const pipeline = this.publisher.pipeline();
    for (const event of events) {
      pipeline.publish(this.channel, RedisPubSubBus.message(event, publishedAt));
    }
    return RedisPubSubBus.receiversOf(pipeline);
  }

  protected async openSubscription(): Promise<void> {
    // Until the connection is ready (reconnecting, or still in its handshake), Redis is not
    // reachable yet: the listener gets its 500 at once rather than a stream that would end
    // when the handshake does.
    if (this.subscriber.status !== 'ready') {
      throw new BusUnavailableError(`Redis subscriber not ready (${this.subscriber.status})`);
    }
    try {
      await this.subscriber.subscribe(this.channel);
    } catch (error) {
      throw new BusUnavailableError(`Redis subscribe failed: ${(error as Error).message}`);
    }
  }

  protected async closeSubscription(): Promise<void> {
    if (this.subscriber.status !== 'ready') return;
    await this.subscriber.unsubscribe(this.channel).catch(() => undefined);
  }

  protected async beat(): Promise<void> {
    // A failed PING needs no handling here: a timeout closes the connection, and the 'close'
    // handler ends the subscription.
    await this.subscriber.ping().catch(() => undefined);
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
}
