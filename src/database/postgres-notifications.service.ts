import {
  Injectable,
  Logger,
  type OnApplicationBootstrap,
  type OnModuleDestroy,
} from '@nestjs/common';
import { Client } from 'pg';
import { InjectConfig, type ConfigOf } from '../config/config-section.js';
import { databaseConfig } from './database.config.js';

/** After a lost connection: 1 s, doubling, up to 30 s. */
const RECONNECT_FIRST_MS = 1_000;
const RECONNECT_MAX_MS = 30_000;
/**
 * How often the otherwise silent listening connection asks Postgres whether it is alive, and
 * how long it waits: one that died without a word (a network cut) would miss notifications.
 */
const HEARTBEAT_MS = 5_000;
const HEARTBEAT_TIMEOUT_MS = 5_000;

/** How the listening connection shows in `pg_stat_activity`. */
export const NOTIFICATIONS_APPLICATION_NAME = 'name-history-notifications';

/** What the module that watches the channel is told. */
export interface ChannelWatcher {
  /** A notification on the channel, from any instance (this one included). */
  notified(payload: string): void;
  /** Listening started or stopped: what was notified while it did not is unknown. */
  listeningChanged(listening: boolean): void;
}

/**
 * Postgres notifications (`LISTEN`), for the module that must hear at once what any instance
 * did to the database (the name events' removals): one connection of this instance's own
 * listens on the channel watched. Call `watch` while the module is built; the connection
 * opens at bootstrap, and a
 * lost one (an error, or no answer to the heartbeat within 5 s) is opened again (after 1 s,
 * doubling to 30 s). With the embedded database nothing listens: it has one instance.
 */
@Injectable()
export class PostgresNotificationsService implements OnApplicationBootstrap, OnModuleDestroy {
  private readonly logger = new Logger('Database');
  private watched?: { channel: string; watcher: ChannelWatcher };
  private client?: Client;
  private live = false;
  private failures = 0;
  private retry?: NodeJS.Timeout;
  private heartbeat?: NodeJS.Timeout;
  private stopped = false;

  constructor(
    @InjectConfig(databaseConfig) private readonly database: ConfigOf<typeof databaseConfig>,
  ) {}

  /**
   * Whether every notification, from any instance, is heard: always with the embedded
   * database (the only instance there can be), else while listening.
   */
  get hearsAll(): boolean {
    return !this.database.url || this.live;
  }

  watch(channel: string, watcher: ChannelWatcher): void {
    if (!/^[a-z_][a-z0-9_]*$/.test(channel)) throw new Error(`Not a channel name: ${channel}`);
    this.watched = { channel, watcher };
  }

  onApplicationBootstrap(): void {
    if (this.database.url && this.watched) void this.listen();
  }

  async onModuleDestroy(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.retry);
    clearInterval(this.heartbeat);
    await this.client?.end().catch(() => undefined);
  }

  private async listen(): Promise<void> {
    const { channel, watcher } = this.watched!;
    const client = new Client({
      connectionString: this.database.url,
      application_name: NOTIFICATIONS_APPLICATION_NAME,
      keepAlive: true,
      query_timeout: HEARTBEAT_TIMEOUT_MS,
    });
    this.client = client;
    client.on('notification', ({ payload }) => watcher.notified(payload ?? ''));
    client.on('error', (error) => this.lost(client, error));
    client.on('end', () => this.lost(client, new Error('connection closed')));
    try {
      await client.connect();
      await client.query(`LISTEN ${channel}`);
    } catch (error) {
      this.lost(client, error as Error);
      return;
    }
    if (this.client !== client) return;
    this.setLive(true);
    this.failures = 0;
    this.heartbeat = setInterval(() => {
      client.query('SELECT 1').catch((error: Error) => this.lost(client, error));
    }, HEARTBEAT_MS);
  }

  private setLive(live: boolean): void {
    if (this.live === live) return;
    this.live = live;
    this.watched?.watcher.listeningChanged(live);
  }

  private lost(client: Client, error: Error): void {
    if (this.client !== client) return;
    this.client = undefined;
    clearInterval(this.heartbeat);
    client.end().catch(() => undefined);
    this.setLive(false);
    if (this.stopped) return;
    const wait = Math.min(RECONNECT_FIRST_MS * 2 ** this.failures, RECONNECT_MAX_MS);
    this.failures += 1;
    this.logger.warn(`Not listening for notifications (${error.message}); again in ${wait} ms`);
    this.retry = setTimeout(() => void this.listen(), wait);
  }
}
