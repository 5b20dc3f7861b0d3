import {
  Injectable,
  Logger,
  type OnApplicationBootstrap,
  type OnModuleDestroy,
} from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import { Client } from 'pg';
import { InjectConfig, type ConfigOf } from '../config/config-section.js';
import { LIVE_CELL, stampOf, type SharedStamp } from '../common/shared-stamp.js';
import { databaseConfig } from './database.config.js';

/** After a lost connection: 1 s, doubling, up to 30 s. */
const RECONNECT_FIRST_MS = 1_000;
const RECONNECT_MAX_MS = 30_000;
/**
 * How often the listening connection, otherwise silent, asks Postgres whether it is alive,
 * and how long it waits: a connection that died without a word (a network cut) would
 * otherwise miss notifications while every stamp still looks valid.
 */
const HEARTBEAT_MS = 5_000;
const HEARTBEAT_TIMEOUT_MS = 5_000;

/** How the listening connection shows in `pg_stat_activity`. */
export const NOTIFICATIONS_APPLICATION_NAME = 'name-history-notifications';
/** The listening connection's own channel, for `caughtUp`. */
export const CAUGHT_UP_CHANNEL = 'name_history_caught_up';

/** Channels one instance can watch. */
const MAX_CHANNELS = 32;
/** One channel, as `PostgresNotifications.watch` gives it. */
export interface NotificationWatch {
  /** Changes with every notification on the channel; undefined while nothing listens. */
  stamp(): number | undefined;
  /** The same stamp, in memory shared with worker threads. */
  readonly shared: SharedStamp;
}

/**
 * Postgres notifications (`LISTEN`), for a module that must hear at once what any instance
 * did to the database: one connection of this instance's own listens on every channel a
 * module watches. Call `watch` while the module is built (a constructor); the connection
 * opens at bootstrap. With the embedded database (one connection) nothing listens, and every
 * stamp stays undefined. A lost connection (an error, or no answer to the heartbeat within
 * 5 s) is opened again (after 1 s, doubling to 30 s), and then every stamp changes: what
 * happened meanwhile is unknown. `caughtUp` lets a request that changed the database answer
 * only once this instance has heard what the change notified.
 */
@Injectable()
export class PostgresNotifications implements OnApplicationBootstrap, OnModuleDestroy {
  private readonly logger = new Logger('Database');
  /** Each watched channel's cell in `cells`, which holds its generation. */
  private readonly channels = new Map<string, number>();
  private readonly cells = new Int32Array(new SharedArrayBuffer(4 * MAX_CHANNELS));
  private client?: Client;
  private failures = 0;
  private retry?: NodeJS.Timeout;
  private heartbeat?: NodeJS.Timeout;
  private stopped = false;
  /** `caughtUp` calls waiting for their token, by token. */
  private readonly waiting = new Map<string, () => void>();

  constructor(
    @InjectConfig(databaseConfig) private readonly database: ConfigOf<typeof databaseConfig>,
  ) {}

  watch(channel: string): NotificationWatch {
    if (!/^[a-z_][a-z0-9_]*$/.test(channel)) throw new Error(`Not a channel name: ${channel}`);
    let index = this.channels.get(channel);
    if (index === undefined) {
      index = this.channels.size + 1;
      if (index >= MAX_CHANNELS) throw new Error(`More than ${MAX_CHANNELS - 1} channels watched`);
      this.channels.set(channel, index);
    }
    const shared = { cells: this.cells, index };
    return { stamp: () => stampOf(shared), shared };
  }

  /**
   * Resolves once this instance has heard every notification committed before the call
   * (Postgres delivers them in commit order, so hearing a token notified now is enough), or
   * at once while nothing listens (every stamp is undefined then). Other instances hear them
   * at about the same moment, not necessarily before.
   */
  caughtUp(): Promise<void> {
    const client = this.client;
    if (Atomics.load(this.cells, LIVE_CELL) === 0 || !client) return Promise.resolve();
    const token = randomUUID();
    const heard = new Promise<void>((resolve) => this.waiting.set(token, resolve));
    client
      .query('SELECT pg_notify($1, $2)', [CAUGHT_UP_CHANNEL, token])
      .catch((error: Error) => this.lost(client, error));
    return heard;
  }

  onApplicationBootstrap(): void {
    if (this.database.url && this.channels.size > 0) void this.listen();
  }

  async onModuleDestroy(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.retry);
    clearInterval(this.heartbeat);
    this.release();
    await this.client?.end().catch(() => undefined);
  }

  private async listen(): Promise<void> {
    const client = new Client({
      connectionString: this.database.url,
      application_name: NOTIFICATIONS_APPLICATION_NAME,
      keepAlive: true,
      query_timeout: HEARTBEAT_TIMEOUT_MS,
    });
    this.client = client;
    client.on('notification', ({ channel, payload }) => {
      if (channel === CAUGHT_UP_CHANNEL) this.heard(payload);
      else this.bump(channel);
    });
    client.on('error', (error) => this.lost(client, error));
    client.on('end', () => this.lost(client, new Error('connection closed')));
    try {
      await client.connect();
      for (const channel of [...this.channels.keys(), CAUGHT_UP_CHANNEL]) {
        await client.query(`LISTEN ${channel}`);
      }
    } catch (error) {
      this.lost(client, error as Error);
      return;
    }
    if (this.client !== client) return;
    for (const channel of this.channels.keys()) this.bump(channel);
    this.setLive(true);
    this.failures = 0;
    this.heartbeat = setInterval(() => {
      client.query('SELECT 1').catch((error: Error) => this.lost(client, error));
    }, HEARTBEAT_MS);
  }

  private bump(channel: string): void {
    const index = this.channels.get(channel);
    if (index !== undefined) Atomics.add(this.cells, index, 1);
  }

  private setLive(live: boolean): void {
    Atomics.store(this.cells, LIVE_CELL, live ? 1 : 0);
  }

  private heard(token = ''): void {
    const resolve = this.waiting.get(token);
    this.waiting.delete(token);
    resolve?.();
  }

  /** Lets every `caughtUp` go: nothing listens any more, so every stamp is undefined. */
  private release(): void {
    for (const resolve of this.waiting.values()) resolve();
    this.waiting.clear();
  }

  private lost(client: Client, error: Error): void {
    if (this.client !== client) return;
    this.client = undefined;
    this.setLive(false);
    this.release();
    clearInterval(this.heartbeat);
    client.end().catch(() => undefined);
    if (this.stopped) return;
    const wait = Math.min(RECONNECT_FIRST_MS * 2 ** this.failures, RECONNECT_MAX_MS);
    this.failures += 1;
    this.logger.warn(`Not listening for notifications (${error.message}); again in ${wait} ms`);
    this.retry = setTimeout(() => void this.listen(), wait);
  }
}
