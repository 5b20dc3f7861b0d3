import { Injectable, Logger, OnApplicationShutdown, OnModuleInit } from '@nestjs/common';
import { Redis, type RedisOptions } from 'ioredis';
import type { StoredNameEvent } from '../history/name-change-event.repository.js';
import { withTimeout } from '../common/with-timeout.js';
import { BusReceiver, BusUnavailableError, NameEventBus } from './name-event-bus.js';

/** What travels on the channel: the stored event and when its publish started. */
type BusMessage = StoredNameEvent & { publishedAt: number };

/**
 * How long Redis may take to answer a command: past it the command fails, and the
 * connection is taken for dead (destroyed, then opened again). A Redis that hangs (stopped,
 * paused, cut off without a reset) then costs a request this long, not forever.
 */
const REDIS_RESPONSE_TIMEOUT_MS = 5_000;

/** How often the subscriber connection, otherwise silent, asks Redis whether it is alive. */
const SUBSCRIBER_PING_MS = 2_000;

/**
 * Commands fail at once while the connection is down (no offline queue), so a request
 * gets its 500 in milliseconds instead of waiting for a broker that may not come back.
 * A command that failed is not sent again on reconnect: a PUBLISH whose request was
 * already answered would reach listeners late, out of id order.
 */
export function redisOptions(name: string): RedisOptions {
  return {
    connectionName: name,
    enableOfflineQueue: false,
    maxRetriesPerRequest: 1,
    connectTimeout: 2_000,
    commandTimeout: REDIS_RESPONSE_TIMEOUT_MS,
    socketTimeout: REDIS_RESPONSE_TIMEOUT_MS,
    autoResendUnfulfilledCommands: false,
    autoResubscribe: false,
    retryStrategy: (attempt) => Math.min(attempt * 200, 2_000),
  };
}

/**
 * ioredis 5 arms its `socketTimeout` timer on the instance, not on the socket: when a
 * connection closes with a command unanswered (Redis killed while a heartbeat PING was out),
 * the timer survives, and when it fires it destroys the connection that replaced the dead
 * one, seconds after it came back (redis/ioredis#2147, fixed in ioredis 6). Every stream then
 * ends a second time for nothing. Disarmed here when a connection closes, as ioredis 6 does.
 */
function disarmStaleSocketTimeout(connection: Redis): void {
  const internals = connection as unknown as { socketTimeoutTimer?: NodeJS.Timeout };
  clearTimeout(internals.socketTimeoutTimer);
  internals.socketTimeoutTimer = undefined;
}

/**
 * Redis pub/sub between instances: one publisher connection and one subscriber connection
 * per instance, shared by all its listeners. Subscribe and unsubscribe run one after the
 * other, so the last call wins.
 */
@Injectable()
export class RedisNameEventBus extends NameEventBus implements OnModuleInit, OnApplicationShutdown {
  readonly kind = 'redis';
  private readonly logger = new Logger('RedisNameEventBus');
  private readonly publisher: Redis;
  private readonly subscriber: Redis;
  private receiver?: BusReceiver;
  private operations: Promise<unknown> = Promise.resolve();
  /**
   * While subscribed: a PING now and then, so a Redis that stopped answering is noticed (by
   * the response timeout) and the streams end, instead of waiting for events that never come.
   */
  private heartbeat?: NodeJS.Timeout;

  constructor(
    url: string,
    private readonly channel: string,
  ) {
    super();
    this.publisher = new Redis(url, redisOptions('name-events:pub'));
    this.subscriber = new Redis(url, redisOptions('name-events:sub'));
    for (const connection of [this.publisher, this.subscriber]) {
      // ioredis reconnects by itself; an 'error' listener keeps a broker outage from
      // becoming an unhandled 'error' event.
      connection.on('error', (error: Error) => this.logger.warn(`Redis: ${error.message}`));
      connection.on('close', () => disarmStaleSocketTimeout(connection));
    }
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

  attach(receiver: BusReceiver): Promise<void> {
    return this.serially(async () => {
      // Redis accepts SUBSCRIBE on a connection still being opened, and ioredis sends it
      // before its ready check; that check's INFO is then refused in subscriber mode, and
      // ioredis drops the connection, ending the stream it had just let open. Until the
      // connection is ready, Redis is not reachable yet.
      if (this.subscriber.status !== 'ready') {
        throw new BusUnavailableError(`Redis subscriber not ready (${this.subscriber.status})`);
      }
      try {
        await this.subscriber.subscribe(this.channel);
      } catch (error) {
        throw new BusUnavailableError(`Redis subscribe failed: ${(error as Error).message}`);
      }
      this.receiver = receiver;
      this.startHeartbeat();
    });
  }

  detach(): Promise<void> {
    return this.serially(async () => {
      this.receiver = undefined;
      this.stopHeartbeat();
      if (this.subscriber.status !== 'ready') return;
      await this.subscriber.unsubscribe(this.channel).catch(() => undefined);
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

  async onApplicationShutdown(): Promise<void> {
    this.receiver = undefined;
    this.stopHeartbeat();
    // quit() waits for a reply, which a connection that is down never gives: cut it instead.
    await Promise.allSettled(
      [this.publisher, this.subscriber].map((c) =>
        c.status === 'ready' ? c.quit() : c.disconnect(),
      ),
    );
  }

  private startHeartbeat(): void {
    this.heartbeat ??= setInterval(() => {
      // A failed PING needs no handling here: a timeout closes the connection, and the
      // 'close' handler ends the streams.
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
    if (!this.receiver) return;
    let parsed: BusMessage;
    try {
      parsed = JSON.parse(message) as BusMessage;
    } catch {
      this.logger.error(`Dropped a malformed bus message: ${message.slice(0, 200)}`);
      return;
    }
    const { publishedAt, ...event } = parsed;
    this.receiver.deliver(event, publishedAt);
  }

  /** The subscription died with the connection: whoever was listening may have missed events. */
  private onSubscriberLost(): void {
    this.stopHeartbeat();
    const receiver = this.receiver;
    this.receiver = undefined;
    receiver?.interrupted(new BusUnavailableError('Redis subscriber connection lost'));
  }
}
