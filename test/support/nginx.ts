import { spawn, type ChildProcess } from 'node:child_process';
import {
  accessSync,
  chmodSync,
  constants,
  existsSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePort, waitFor } from './ports.js';

/** What docker-compose.yml sets on each instance behind the proxy (besides the addresses). */
export const COMPOSE_ENV = { TRUST_PROXY: '1' };

/** The shipped proxy configuration (docker-compose.yml mounts it into nginx's conf.d). */
export const SHIPPED_CONFIG = fileURLToPath(new URL('../../deploy/nginx.conf', import.meta.url));

/** Debian's nginx: on the PATH, or where the package puts it (/usr/sbin is not on every PATH). */
export function findNginx(): string {
  const candidates = [
    ...(process.env.PATH ?? '').split(delimiter).map((dir) => join(dir, 'nginx')),
    '/usr/sbin/nginx',
  ];
  for (const candidate of candidates) {
    try {
      accessSync(candidate, constants.X_OK);
      return candidate;
    } catch {
      // not here
    }
  }
  throw new Error('nginx is not installed (apt-get install nginx; .ci/run installs it)');
}

/**
 * The shipped configuration with only what a test run must change: the upstream addresses
 * (app1, app2), the listen address, and the access log's path. Throws when the file no
 * longer has those lines, so the test never silently runs something else.
 */
export function rewriteShippedConfig(
  shipped: string,
  { upstreams, port, accessLog }: { upstreams: [number, number]; port: number; accessLog: string },
): string {
  const replacements: [RegExp, (match: string, ...groups: string[]) => string][] = [
    [/\bserver app([12]):3000\b/g, (_m, n) => `server 127.0.0.1:${upstreams[Number(n) - 1]}`],
    [/^(\s*)listen 80;$/gm, (_m, indent) => `${indent}listen 127.0.0.1:${port};`],
    [/\baccess_log \/var\/log\/nginx\/access\.log\b/g, () => `access_log ${accessLog}`],
  ];
  let config = shipped;
  for (const [pattern, replace] of replacements) {
    const count = config.match(pattern)?.length ?? 0;
    const expected = pattern.source.includes('app([12])') ? 2 : 1;
    if (count !== expected) {
      throw new Error(
        `deploy/nginx.conf: expected ${expected} match(es) of ${pattern}, found ${count}`,
      );
    }
    config = config.replace(pattern, replace);
  }
  return config;
}

/**
 * Debian's nginx running deploy/nginx.conf as a non-root user could: its own prefix, pid,
 * logs and temp paths in a temporary directory. The main configuration around it is the
 * official nginx image's (what docker-compose.yml runs): the shipped file is included in
 * its `http` block.
 */
export class Nginx {
  private constructor(
    private readonly child: ChildProcess,
    readonly port: number,
    private readonly dir: string,
    private output: { text: string },
  ) {}

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  /** The access log so far, one line per request (the shipped `upstreams` format). */
  accessLog(): string[] {
    const file = join(this.dir, 'access.log');
    if (!existsSync(file)) return [];
    return readFileSync(file, 'utf8').split('\n').filter(Boolean);
  }

  errorLog(): string {
    const file = join(this.dir, 'error.log');
    return `${existsSync(file) ? readFileSync(file, 'utf8') : ''}${this.output.text}`;
  }

  static async start(upstreams: [number, number]): Promise<Nginx> {
    const port = await freePort();
    const dir = mkdtempSync(join(tmpdir(), 'nginx-'));
    // Run as root (CI), nginx's workers drop to "nobody", who must reach the temp paths.
    chmodSync(dir, 0o755);
    const site = rewriteShippedConfig(readFileSync(SHIPPED_CONFIG, 'utf8'), {
      upstreams,
      port,
      accessLog: join(dir, 'access.log'),
    });
    writeFileSync(join(dir, 'default.conf'), site);
    const mimeTypes = existsSync('/etc/nginx/mime.types') ? 'include /etc/nginx/mime.types;' : '';
    writeFileSync(
      join(dir, 'nginx.conf'),
      `daemon off;
worker_processes 1;
pid ${join(dir, 'nginx.pid')};
error_log ${join(dir, 'error.log')} warn;
events { worker_connections 1024; }
http {
    ${mimeTypes}
    default_type application/octet-stream;
    sendfile on;
    keepalive_timeout 65;
    client_body_temp_path ${join(dir, 'client_body')};
    proxy_temp_path ${join(dir, 'proxy')};
    fastcgi_temp_path ${join(dir, 'fastcgi')};
    uwsgi_temp_path ${join(dir, 'uwsgi')};
    scgi_temp_path ${join(dir, 'scgi')};
    include ${join(dir, 'default.conf')};
}
`,
    );
    const child = spawn(
      findNginx(),
      ['-p', dir, '-c', join(dir, 'nginx.conf'), '-e', join(dir, 'error.log')],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    const output = { text: '' };
    child.stdout?.on('data', (chunk: Buffer) => (output.text += chunk.toString()));
    child.stderr?.on('data', (chunk: Buffer) => (output.text += chunk.toString()));
    const nginx = new Nginx(child, port, dir, output);
    try {
      await waitFor(`nginx on port ${port}`, async () => {
        if (child.exitCode !== null) throw new Error(`nginx exited: ${nginx.errorLog()}`);
        return accepts(port);
      });
    } catch (error) {
      await nginx.stop();
      throw error;
    }
    return nginx;
  }

  /** Stops nginx (SIGQUIT: graceful, as `nginx -s quit`) and removes its directory. */
  async stop(): Promise<void> {
    const child = this.child;
    if (child.exitCode === null && child.signalCode === null) {
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGQUIT');
      const timer = setTimeout(() => child.kill('SIGKILL'), 5_000);
      await exited;
      clearTimeout(timer);
    }
    rmSync(this.dir, { recursive: true, force: true });
  }
}

function accepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect({ port, host: '127.0.0.1' });
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}
