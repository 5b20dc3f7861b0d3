// Postgres and Redis housekeeping for a run: its own databases (bench_r<pid>_<n>), its own
// Redis key prefix, and removal of both afterwards (and of a dead run's leftovers).
import pg from 'pg';
import { Redis } from 'ioredis';
import { isAlive } from './snapshot.mjs';

export class Postgres {
  constructor(adminUrl, { durableCommit = false } = {}) {
    this.adminUrl = adminUrl;
    this.durableCommit = durableCommit;
    this.created = new Set();
  }

  urlFor(database) {
    const url = new URL(this.adminUrl);
    url.pathname = `/${database}`;
    return url.toString();
  }

  async #admin(fn) {
    const client = new pg.Client({
      connectionString: this.adminUrl,
      connectionTimeoutMillis: 10_000,
    });
    await client.connect();
    try {
      return await fn(client);
    } finally {
      await client.end();
    }
  }

  async version() {
    return this.#admin(async (c) => (await c.query('SHOW server_version')).rows[0].server_version);
  }

  async create(database) {
    assertBenchName(database);
    await this.#admin(async (c) => {
      await c.query(`CREATE DATABASE "${database}"`);
      // Commits wait for the WAL flush only with --durable-commit: this VM's fsync latency
      // varies enough to swing the publish rate by a quarter between identical runs.
      if (!this.durableCommit) {
        await c.query(`ALTER DATABASE "${database}" SET synchronous_commit = off`);
      }
    });
    this.created.add(database);
    return this.urlFor(database);
  }

  async drop(database) {
    assertBenchName(database);
    await this.#admin((c) => c.query(`DROP DATABASE IF EXISTS "${database}" WITH (FORCE)`));
    this.created.delete(database);
  }

  async dropAll() {
    for (const database of [...this.created]) {
      await this.drop(database).catch(() => {});
    }
  }

  /** Drops bench_r<pid>_* databases whose run (pid) is gone. */
  async dropStale() {
    const names = await this.#admin(
      async (c) =>
        (await c.query(`SELECT datname FROM pg_database WHERE datname LIKE 'bench\\_r%'`)).rows,
    );
    const dropped = [];
    for (const { datname } of names) {
      const pid = Number(/^bench_r(\d+)_/.exec(datname)?.[1]);
      if (pid && pid !== process.pid && !isAlive(pid)) {
        await this.drop(datname);
        dropped.push(datname);
      }
    }
    return dropped;
  }

  /** Runs `fn(client)` on a connection to `database`. */
  async with(database, fn) {
    const client = new pg.Client({
      connectionString: this.urlFor(database),
      connectionTimeoutMillis: 10_000,
    });
    await client.connect();
    try {
      return await fn(client);
    } finally {
      await client.end();
    }
  }
}

function assertBenchName(database) {
  if (!/^bench_[a-z0-9_]+$/.test(database)) {
    throw new Error(`refusing to touch database ${database}: not a bench_* name`);
  }
}

/**
 * Seeds `events` name changes over `users` users ("user0".."user<users-1>"), interleaved in
 * time as real traffic would be, then VACUUM ANALYZE so both targets query the same state.
 */
export async function seedHistory(postgres, database, { events, users }) {
  await postgres.with(database, async (c) => {
    await c.query('SET synchronous_commit = off');
    await c.query(
      `INSERT INTO name_change_events (user_id, type, name, changed_at)
       SELECT 'user' || (g % $2),
              CASE WHEN g % 3 = 0 THEN 'displayname' ELSE 'username' END,
              'name-' || g,
              timestamptz '2020-01-01 00:00:00+00' + g * interval '1 second'
         FROM generate_series(1, $1::int) AS g`,
      [events, users],
    );
    await c.query('VACUUM ANALYZE name_change_events');
  });
}

export async function redisInfo(url) {
  const redis = new Redis(url, {
    lazyConnect: true,
    maxRetriesPerRequest: 1,
    connectTimeout: 5_000,
  });
  try {
    await redis.connect();
    const info = await redis.info('server');
    return /redis_version:(\S+)/.exec(info)?.[1] ?? 'unknown';
  } finally {
    redis.disconnect();
  }
}

/** Deletes the keys of bench_r<pid>_* prefixes whose run (pid) is gone. */
export async function deleteStaleRedisKeys(url) {
  return deleteRedisPrefix(url, 'bench_r', (key) => {
    const pid = Number(/^bench_r(\d+)_/.exec(key)?.[1]);
    return pid > 0 && pid !== process.pid && !isAlive(pid);
  });
}

/** Deletes the keys under `prefix` (bounded: at most 1,000 SCAN rounds). */
export async function deleteRedisPrefix(url, prefix, filter = () => true) {
  if (!/^bench_/.test(prefix)) {
    throw new Error(`refusing to delete Redis keys under ${prefix}`);
  }
  const redis = new Redis(url, {
    lazyConnect: true,
    maxRetriesPerRequest: 1,
    connectTimeout: 5_000,
  });
  let deleted = 0;
  try {
    await redis.connect();
    let cursor = '0';
    for (let round = 0; round < 1_000; round++) {
      const [nextCursor, keys] = await redis.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1000);
      const doomed = keys.filter(filter);
      if (doomed.length > 0) {
        deleted += await redis.del(...doomed);
      }
      cursor = nextCursor;
      if (cursor === '0') {
        break;
      }
    }
  } finally {
    redis.disconnect();
  }
  return deleted;
}
