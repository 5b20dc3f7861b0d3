import { PGlite } from '@electric-sql/pglite';
import { PGLiteSocketServer } from '@electric-sql/pglite-socket';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { DataDirLock } from './data-dir-lock.js';

/** libpq's socket file name: `pg` connects to `<host dir>/.s.PGSQL.<port>`. */
const SOCKET_PORT = 5432;

/**
 * The embedded default: Postgres compiled to WASM (PGlite), its files under `dataDir`,
 * served on a private Unix socket so that TypeORM and `pg` use the very code path they use
 * against a real server. PGlite runs one session at a time: use a pool of one. One process
 * at a time on a directory: a second one refuses to start (DataDirLock).
 */
export class EmbeddedPostgres {
  private constructor(
    readonly dataDir: string,
    private readonly socketDir: string,
    private readonly db: PGlite,
    private readonly server: PGLiteSocketServer,
    private readonly lock: DataDirLock,
  ) {}

  static async start(dataDir: string): Promise<EmbeddedPostgres> {
    const dir = resolve(dataDir, 'pgdata');
    await mkdir(dir, { recursive: true });
    const lock = await DataDirLock.acquire(resolve(dataDir));
    try {
      const db = await PGlite.create({ dataDir: dir });
      const socketDir = await mkdtemp(join(tmpdir(), 'name-history-pg-'));
      const server = new PGLiteSocketServer({
        db,
        path: join(socketDir, `.s.PGSQL.${SOCKET_PORT}`),
      });
      await server.start();
      return new EmbeddedPostgres(dir, socketDir, db, server, lock);
    } catch (error) {
      await lock.release();
      throw error;
    }
  }

  get connection() {
    return { host: this.socketDir, port: SOCKET_PORT, username: 'postgres', database: 'postgres' };
  }

  async stop(): Promise<void> {
    await this.server.stop();
    await this.db.close();
    await rm(this.socketDir, { recursive: true, force: true });
    await this.lock.release();
  }
}
