import net from 'node:net';

/**
 * Ports handed out below the kernel's ephemeral range (32768–60999 on Linux), so nothing can
 * take one between the check here and the child process binding it: the kernel never gives
 * those ports to outgoing connections or to `listen(0)`, which is what made a port picked by
 * the kernel turn up taken when a service started on it under a loaded test run. Each Jest
 * worker draws from a block of its own, so two workers never try the same port.
 */
const BASE = 20_000;
const BLOCK = 1_500;
const worker = Math.max(Number(process.env.JEST_WORKER_ID ?? '1'), 1) - 1;
const first = BASE + (worker % 8) * BLOCK;
let next = first + Math.floor(Math.random() * BLOCK);

function isFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = net.createServer();
    server.once('error', () => resolve(false));
    // No host: the wildcard address (dual-stack `::`), which is what the service binds.
    server.listen(port, () => server.close(() => resolve(true)));
  });
}

/** A TCP port free now and out of the kernel's reach (see above), on every local address. */
export async function freePort(): Promise<number> {
  for (let tries = 0; tries < BLOCK; tries++) {
    const port = first + ((next++ - first) % BLOCK);
    if (await isFree(port)) return port;
  }
  throw new Error(`No free port in ${first}–${first + BLOCK - 1}`);
}

/** Polls `check` until it resolves truthy, or rejects after `timeoutMs` with `what`. */
export async function waitFor<T>(
  what: string,
  check: () => Promise<T | undefined | false> | T | undefined | false,
  { timeoutMs = 15_000, intervalMs = 50 } = {},
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const value = await check();
      if (value) return value;
    } catch (error) {
      last = error;
    }
    if (Date.now() > deadline) {
      const reason = last instanceof Error ? `: ${last.message}` : '';
      throw new Error(`Timed out after ${timeoutMs} ms waiting for ${what}${reason}`);
    }
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
}
