import {
  Injectable,
  Logger,
  type OnApplicationBootstrap,
  type OnModuleDestroy,
} from '@nestjs/common';
import { Client } from 'pg';
import { InjectConfig, type ConfigOf } from '../config/config-section.js';
import { databaseConfig } from '../database/database.config.js';

/** The channel the webhooks' triggers notify (see the migration that creates them). */
export const QUEUE_CHANGED_CHANNEL = 'webhook_queue_changed';

/** After a lost connection: 1 s, doubling, up to 30 s. */
const RECONNECT_FIRST_MS = 1_000;
const RECONNECT_MAX_MS = 30_000;

/**
 * Tells the senders when queued deliveries were taken away by anyone, on any instance: an
 * event erased (erasure, opt-out, retention) or an endpoint deleted. Postgres notifies
 * QUEUE_CHANGED_CHANNEL when such a statement commits, and this instance listens on a
 * connection of its own. A sender may trust what it read while `stamp()` is unchanged; while
 * nothing listens (the embedded database, which takes one connection; a lost connection)
 * `stamp()` is undefined and a sender checks before each attempt instead.
 */
@Injectable()
export class WebhookQueueWatch implements OnApplicationBootstrap, OnModuleDestroy {
  private readonly logger = new Logger('Webhooks');
  private client?: Client;
  private live = false;
  private generation = 0;
  private failures = 0;
  private retry?: NodeJS.Timeout;
  private stopped = false;

  constructor(
    @InjectConfig(databaseConfig) private readonly database: ConfigOf<typeof databaseConfig>,
  ) {}

  /** Changes whenever the queue may have lost deliveries; undefined while nothing listens. */
  stamp(): number | undefined {
    return this.live ? this.generation : undefined;
  }

  onApplicationBootstrap(): void {
    if (this.database.url) void this.listen();
  }

  async onModuleDestroy(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.retry);
    await this.client?.end().catch(() => undefined);
  }

  private async listen(): Promise<void> {
    const client = new Client({ connectionString: this.database.url, keepAlive: true });
    this.client = client;
    client.on('notification', () => (this.generation += 1));
    client.on('error', (error) => this.lost(client, error));
    client.on('end', () => this.lost(client, new Error('connection closed')));
    try {
      await client.connect();
      await client.query(`LISTEN ${QUEUE_CHANGED_CHANNEL}`);
    } catch (error) {
      this.lost(client, error as Error);
      return;
    }
    if (this.client !== client) return;
    // Whatever happened while nothing listened is unknown: what was read before is stale.
    this.generation += 1;
    this.live = true;
    this.failures = 0;
  }

  private lost(client: Client, error: Error): void {
    if (this.client !== client) return;
    this.client = undefined;
    this.live = false;
    client.end().catch(() => undefined);
    if (this.stopped) return;
    const wait = Math.min(RECONNECT_FIRST_MS * 2 ** this.failures, RECONNECT_MAX_MS);
    this.failures += 1;
    this.logger.warn(
      `Not listening for queue changes (${error.message}): senders check before each attempt; again in ${wait} ms`,
    );
    this.retry = setTimeout(() => void this.listen(), wait);
  }
}
