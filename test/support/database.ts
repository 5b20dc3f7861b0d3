import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { BASE_DATABASE_URL } from './environment.js';

/**
 * A database of its own for one test file, created next to the configured one and dropped
 * afterwards, so test files can run in parallel. Refuses to touch a server whose database
 * name lacks "test": the suite must never run against a real database.
 */
export class TestDatabase {
  private readonly clients = new Set<pg.Client>();

  private constructor(
    readonly url: string,
    private readonly name: string,
  ) {}

  static async create(): Promise<TestDatabase> {
    const base = new URL(BASE_DATABASE_URL);
    const baseName = decodeURIComponent(base.pathname.slice(1));
    if (!baseName.includes('test')) {
      throw new Error(
        `Refusing to run tests against database "${baseName}": its name must contain "test"`,
      );
    }
    const name = `${baseName}_${randomBytes(4).toString('hex')}`;
    await withAdmin((client) => client.query(`CREATE DATABASE "${name}"`));
    const url = new URL(BASE_DATABASE_URL);
    url.pathname = `/${name}`;
    return new TestDatabase(url.toString(), name);
  }

  /** Runs SQL on this database (for assertions and clean-up only; seeding goes through the app). */
  async query<T extends pg.QueryResultRow = Record<string, unknown>>(
    sql: string,
    params: unknown[] = [],
  ) {
    const client = new pg.Client({ connectionString: this.url });
    await client.connect();
    try {
      return (await client.query<T>(sql, params)).rows;
    } finally {
      await client.end();
    }
  }

  /**
   * A connection of the test's own to this database (to hold a lock, or for many queries),
   * ended when the database is dropped if not before.
   */
  async connect(): Promise<pg.Client> {
    const client = new pg.Client({ connectionString: this.url });
    await client.connect();
    this.clients.add(client);
    client.once('end', () => this.clients.delete(client));
    return client;
  }

  /**
   * How many sessions on this database wait for a lock (only advisory locks, with
   * `advisory`): a request the test holds up with a lock of its own has got that far.
   */
  async sessionsWaitingOnLock(advisory = false): Promise<number> {
    const [{ waiting }] = await this.query<{ waiting: number }>(
      `SELECT count(*)::int AS waiting FROM pg_stat_activity
        WHERE datname = current_database() AND wait_event_type = 'Lock'
          AND ($1::boolean IS FALSE OR wait_event = 'advisory')`,
      [advisory],
    );
    return waiting;
  }

  async drop(): Promise<void> {
    await Promise.all([...this.clients].map((client) => client.end()));
    await withAdmin((client) =>
      client.query(`DROP DATABASE IF EXISTS "${this.name}" WITH (FORCE)`),
    );
  }
}

async function withAdmin<T>(work: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: BASE_DATABASE_URL });
  await client.connect();
  try {
    return await work(client);
  } finally {
    await client.end();
  }
}
