import { once } from 'node:events';
import { unlink } from 'node:fs/promises';
import net from 'node:net';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { ConfigurationError } from '../config/load-configuration.js';

/** The lock's name in DATA_DIR. */
const LOCK_NAME = 'instance.lock';
/** sun_path holds 108 bytes with its terminating NUL. */
const MAX_SOCKET_PATH = 107;

/**
 * One instance per embedded database directory. PGlite is one process's database: a second
 * process on the same files would corrupt them. The lock is a Unix socket in the directory
 * that the owner listens on: the kernel releases it with the process, however it ends (a
 * crash or SIGKILL leaves only a file nobody listens on, which the next owner replaces), and
 * it works across containers sharing the volume. A second instance that connects is told
 * who holds it, and refuses to start.
 */
export class DataDirLock {
  private constructor(private readonly server: net.Server) {}

  /** `dataDir`: an absolute path, which must exist. */
  static async acquire(dataDir: string): Promise<DataDirLock> {
    const path = join(dataDir, LOCK_NAME);
    if (Buffer.byteLength(path) > MAX_SOCKET_PATH) {
      throw new ConfigurationError(
        `DATA_DIR ${dataDir} is too long for its lock (${path} must be at most ${MAX_SOCKET_PATH} bytes)`,
      );
    }
    for (let attempt = 1; ; attempt++) {
      try {
        return new DataDirLock(await listen(path));
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'EADDRINUSE' || attempt === 3) throw error;
      }
      const owner = await askOwner(path);
      if (owner !== undefined) {
        throw new ConfigurationError(
          `DATA_DIR ${dataDir} is in use by another instance (${owner}): run one instance per DATA_DIR, or set DATABASE_URL`,
        );
      }
      // Left by an instance that died: nobody listens on it.
      await unlink(path).catch((error: NodeJS.ErrnoException) => {
        if (error.code !== 'ENOENT') throw error;
      });
    }
  }

  /** Closing the server removes the socket file. */
  release(): Promise<void> {
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}

async function listen(path: string): Promise<net.Server> {
  const owner = `pid ${process.pid} on host ${hostname()}`;
  const server = net.createServer((socket) => {
    socket.on('error', () => undefined);
    socket.end(owner);
  });
  // Rejects with the error that comes instead (EADDRINUSE).
  await once(server.listen(path), 'listening');
  // The lock must not keep the process alive.
  return server.unref();
}

/** Who holds the lock, or undefined when nobody listens on it any more. */
function askOwner(path: string): Promise<string | undefined> {
  return new Promise((resolve) => {
    const socket = net.connect(path);
    let answer = '';
    socket.setEncoding('utf8');
    socket.setTimeout(2_000, () => socket.destroy());
    socket.on('data', (chunk: string) => (answer += chunk));
    socket.once('error', (error: NodeJS.ErrnoException) =>
      // Refused: a file nobody listens on. Anything else: someone may, so it is in use.
      resolve(
        error.code === 'ECONNREFUSED' || error.code === 'ENOENT' ? undefined : 'unknown owner',
      ),
    );
    socket.once('close', (hadError) => {
      if (!hadError) resolve(answer || 'unknown owner');
    });
  });
}
