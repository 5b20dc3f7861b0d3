import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { BASE_DATABASE_URL } from './environment.js';

/**
 * A database of its own for one test file, created next to the configured one and dropped
 * afterwards, so test files can run in parallel. Refuses to touch a server whose database
 * name lacks "test": the suite must never run against a real database.
 */
export class TestDatabase {
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

  async drop(): Promise<void> {
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
