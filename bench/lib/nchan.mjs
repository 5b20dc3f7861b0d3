// The second yardstick: nchan (the nginx pub/sub module, in C) with one worker, an
// eventsource subscriber location and a publisher location on one channel. Its locations
// have the service's paths, so the same listener and publisher processes drive it.
import { spawnSync } from 'node:child_process';
import { accessSync, constants, existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Instance } from './harness.mjs';
import { Child, freePort, waitReady } from './procs.mjs';

const NGINX = '/usr/sbin/nginx';
// Debian 12 installs the module under /usr/lib/nginx/modules; older releases under
// /usr/share/nginx/modules.
const MODULES = [
  '/usr/lib/nginx/modules/ngx_nchan_module.so',
  '/usr/share/nginx/modules/ngx_nchan_module.so',
];
const PACKAGES = ['nginx', 'libnginx-mod-nchan'];

function executable(path) {
  try {
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

function locate(nginx) {
  if (!executable(nginx)) {
    return { reason: `${nginx} not found` };
  }
  const module = MODULES.find((m) => existsSync(m));
  if (!module) {
    return { reason: `the nchan module is not installed (looked for ${MODULES.join(', ')})` };
  }
  return { nginx, module };
}

function aptGet(args, log) {
  log(`bench: apt-get ${args.join(' ')}`);
  const r = spawnSync('apt-get', args, {
    env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' },
    stdio: ['ignore', 'ignore', 'pipe'],
    encoding: 'utf8',
    timeout: 300_000,
  });
  return r.status === 0 ? null : (r.error?.message ?? r.stderr.trim().split('\n').pop());
}

/**
 * nginx and its nchan module: `{ nginx, module }`, or `{ reason }` when they are missing
 * and could not be installed. With `install`, missing packages are installed with apt-get
 * (as root only; `apt-get update` first only if the plain install fails).
 */
export function findNchan({ nginx = NGINX, install = false, log }) {
  const found = locate(nginx);
  if (found.module || !install) {
    return found;
  }
  if (process.getuid?.() !== 0 || !executable('/usr/bin/apt-get')) {
    return { reason: `${found.reason}; installing ${PACKAGES.join(' ')} needs apt-get as root` };
  }
  const args = ['install', '-y', '--no-install-recommends', ...PACKAGES];
  let failure = aptGet(args, log);
  if (failure) {
    failure = aptGet(['update'], log) ?? aptGet(args, log);
  }
  const after = locate(nginx);
  if (after.module) {
    return after;
  }
  const apt = `apt-get install ${PACKAGES.join(' ')}`;
  return {
    reason: failure ? `${after.reason}; ${apt} failed: ${failure}` : `${after.reason} after ${apt}`,
  };
}

function config(dir, port, module) {
  const temp = (name) => `${name}_temp_path ${join(dir, name)};`;
  return `# Written by bench/lib/nchan.mjs for one benchmark run.
load_module ${module};
daemon off;
# The one worker and nothing else: no master to supervise it, so the process the harness
# starts is the process that serves, and /proc's figures are its alone.
master_process off;
worker_processes 1;
pid ${join(dir, 'nginx.pid')};
error_log ${join(dir, 'error.log')} warn;
events {
  worker_connections 19500;
}
http {
  access_log off;
  ${temp('client_body')}
  ${temp('proxy')}
  ${temp('fastcgi')}
  ${temp('uwsgi')}
  ${temp('scgi')}
  server {
    listen 127.0.0.1:${port};
    location = /api/health/ready {
      return 200 "ok";
    }
    location = /api/webhooks/prevnames/listen {
      nchan_subscriber eventsource;
      nchan_channel_id bench;
    }
    location = /api/webhooks/prevnames {
      nchan_publisher;
      nchan_channel_id bench;
    }
  }
}
`;
}

/** One nginx + nchan server, a child of this run, on a free loopback port. */
export class NchanInstance extends Instance {
  static async start(ctx, target, { label = target.name } = {}) {
    const port = await freePort();
    // Named like the dist copies, so a dead run's directory is removed at the next start.
    const dir = mkdtempSync(join(tmpdir(), `name-history-bench-${process.pid}-nchan-`));
    const file = join(dir, 'nginx.conf');
    writeFileSync(file, config(dir, port, target.module));
    const nginxArgs = ['-p', dir, '-c', file, '-e', join(dir, 'error.log')];
    // nginx does not notice its parent dying, as the Node servers do: the kernel kills it.
    const [cmd, args] = executable('/usr/bin/setpriv')
      ? ['/usr/bin/setpriv', ['--pdeathsig', 'KILL', target.nginx, ...nginxArgs]]
      : [target.nginx, nginxArgs];
    const child = new Child(`${label}:${port}`, cmd, args, { cwd: dir, echo: ctx.verbose });
    const instance = new NchanInstance(child, port, false);
    instance.dir = dir;
    ctx.track(instance);
    await waitReady(`${instance.origin}/api/health/ready`, child, 10_000);
    return instance;
  }

  /** nchan answers a publish with 201 (delivered to subscribers) or 202 (queued). */
  publishOk(status) {
    return status === 201 || status === 202;
  }

  async stop() {
    // SIGKILL: nginx 1.22 with nchan 1.3.6 aborts in free() on a graceful exit, and there is
    // nothing to flush.
    await this.child.stop(0, 'SIGKILL');
    rmSync(this.dir, { recursive: true, force: true });
  }
}
