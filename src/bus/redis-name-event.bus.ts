import type { Redis } from 'ioredis';
import type { BusMetrics } from './bus.metrics.js';
import type { RedisConnections } from '../redis/index.js';
import { BusUnavailableError } from './name-event-bus.js';
import { RedisPubSubBus } from './redis-pub-sub.bus.js';

/**
 * Classic Redis pub/sub between instances (one server, or Sentinel's master): one publisher
 * connection and one subscriber connection per instance.
 */
export class RedisNameEventBus extends RedisPubSubBus {
  declare protected readonly publisher: Redis;
  declare protected readonly subscriber: Redis;

  constructor(redis: RedisConnections, metrics: BusMetrics) {
    super(redis.create('publisher'), redis.key('name-events'), 'publish', metrics);
    this.subscriber = redis.create('subscriber') as Redis;
    this.subscriber.on('message', (_channel: string, message: string) => this.onMessage(message));
    this.subscriber.on('close', () => this.onSubscriptionLost('Redis subscriber connection lost'));
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

  async ping(): Promise<void> {
    await this.publisher.ping();
  }
}
