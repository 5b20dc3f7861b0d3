// The benchmark baseline: the service's three routes on raw node:http + pg + ioredis, with
// no framework. Same tables, same wire format; minimal validation. Not a product: it exists
// so the service has something to be compared with.
//
// BASELINE_WRITE picks how an event reaches a listener:
//   res     (default) `res.write(frame)` of the pre-framed SSE bytes, as any raw-Node SSE
//           server does: ServerResponse adds the chunked framing on every write;
//   socket  the frame wrapped once into an HTTP chunk and written straight to every socket:
//           a step past plain Node, kept as a second line in the tables;
//   nest    the smallest NestJS `@Sse()` handler (nest's sample/28-sse): every listener's
//           Observable maps the shared stream of events, one message object per event, and
//           Nest's own writer frames and writes it, with its `maxPendingDataLength` as the
//           bound. The framework's floor: what any `@Sse()` route costs per delivery. The
//           history reads too go through Nest then: the smallest `@Get()` route, one query
//           per read, its answer by `res.json`, the floor of a read on Nest and Express.
//
// Env: PORT (3000), DATABASE_URL, REDIS_URL, REDIS_CHANNEL (bench:baseline:events),
//      SSE_KEEPALIVE_MS (15000), SSE_BUFFER_LIMIT_BYTES (1 MiB), DATABASE_POOL_SIZE (10),
//      BASELINE_WRITE (res).
import http from 'node:http';
import pg from 'pg';
import { Redis } from 'ioredis';

const PORT = Number(process.env.PORT ?? 3000);
const DATABASE_URL = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const CHANNEL = process.env.REDIS_CHANNEL ?? 'bench:baseline:events';
const KEEPALIVE_MS = Number(process.env.SSE_KEEPALIVE_MS ?? 15_000);
const BUFFER_LIMIT = Number(process.env.SSE_BUFFER_LIMIT_BYTES ?? 1024 * 1024);
const POOL_SIZE = Number(process.env.DATABASE_POOL_SIZE ?? 10);
const WRITE_MODE = process.env.BASELINE_WRITE ?? 'res';
if (!['res', 'socket', 'nest'].includes(WRITE_MODE)) {
  throw new Error(`BASELINE_WRITE must be "res", "socket" or "nest", not "${WRITE_MODE}"`);
}
const BODY_LIMIT = 16 * 1024;
// The ordering lock: any fixed 64-bit number.
const ORDER_LOCK_KEY = '7310582364019283746';

const pool = new pg.Pool({ connectionString: DATABASE_URL, max: POOL_SIZE });
pool.on('error', () => {}); // an idle client's error is reported on its next use
const pub = new Redis(REDIS_URL, { lazyConnect: false, enableAutoPipelining: false });
const sub = new Redis(REDIS_URL, { lazyConnect: false });
pub.on('error', () => {});
sub.on('error', () => {});

await pool.query(`
  CREATE TABLE IF NOT EXISTS name_change_events (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    user_id text NOT NULL,
    type text NOT NULL CHECK (type IN ('username', 'displayname')),
    name text NOT NULL,
    changed_at timestamptz NOT NULL,
    stored_at timestamptz NOT NULL DEFAULT now(),
    UNIQUE (user_id, type, name, changed_at)
  )`);
await pool.query(
  'CREATE INDEX IF NOT EXISTS name_change_events_user_history_idx ON name_change_events (user_id, changed_at, id)',
);

const UTC_ISO = `to_char(changed_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;
const HISTORY_QUERY = {
  name: 'history',
  text: `SELECT type, name, ${UTC_ISO} AS "changedAt" FROM name_change_events WHERE user_id = $1 ORDER BY changed_at, id`,
};
// The lock is taken inside the INSERT, so storing costs one round trip; the identity
// value is drawn after the lock is held, which makes ids follow the lock order.
const INSERT_QUERY = {
  name: 'insert',
  text: `INSERT INTO name_change_events (user_id, type, name, changed_at)
         SELECT $1, $2, $3, $4::timestamptz FROM (SELECT pg_advisory_lock(${ORDER_LOCK_KEY})) AS l
         ON CONFLICT (user_id, type, name, changed_at) DO NOTHING
         RETURNING id::text AS id`,
};
const EXISTING_QUERY = {
  name: 'existing',
  text: `SELECT id::text AS id FROM name_change_events
         WHERE user_id = $1 AND type = $2 AND name = $3 AND changed_at = $4::timestamptz`,
};
const UNLOCK_QUERY = { name: 'unlock', text: `SELECT pg_advisory_unlock(${ORDER_LOCK_KEY})` };

// --- listeners --------------------------------------------------------------------------

const listeners = new Set();
const SSE_HEADERS = {
  'Content-Type': 'text/event-stream',
  'Cache-Control': 'no-cache',
  Connection: 'keep-alive',
  'X-Accel-Buffering': 'no',
};
const CRLF = Buffer.from('\r\n');

/** An SSE frame as one HTTP/1.1 chunk (the stream's Transfer-Encoding is chunked). */
function chunk(frame) {
  return Buffer.concat([Buffer.from(`${frame.length.toString(16)}\r\n`), frame, CRLF]);
}
const KEEPALIVE_FRAME = Buffer.from(': keep-alive\n\n');
const KEEPALIVE_CHUNK = chunk(KEEPALIVE_FRAME);

/**
 * Writes one SSE frame to every listener: with `res.write` (ServerResponse frames the chunk
 * and corks the socket on every call), or as one pre-encoded chunk with one `socket.write`
 * per listener. A listener that stopped reading is cut off.
 */
function broadcast(frame, encodedChunk = WRITE_MODE === 'socket' ? chunk(frame) : null) {
  if (nest) {
    nest.next(frame);
    return;
  }
  for (const res of listeners) {
    const socket = res.socket;
    if (socket === null || socket.writableLength > BUFFER_LIMIT) {
      listeners.delete(res);
      res.destroy();
    } else if (encodedChunk === null) {
      res.write(frame);
    } else {
      socket.write(encodedChunk);
    }
  }
}

// The subscription is held only while this process has listeners, so PUBLISH's receiver
// count says how many processes have listeners (0 → the POST answers 500).
let subscribed = false;
let subscription = Promise.resolve();
function syncSubscription() {
  subscription = subscription
    .catch(() => {})
    .then(async () => {
      const want = listeners.size > 0 || pendingListeners > 0;
      if (want && !subscribed) {
        await sub.subscribe(CHANNEL);
        subscribed = true;
      } else if (!want && subscribed) {
        await sub.unsubscribe(CHANNEL);
        subscribed = false;
      }
    });
  return subscription;
}
let pendingListeners = 0;
sub.on('messageBuffer', (_channel, frame) => broadcast(frame));

setInterval(
  () => broadcast(KEEPALIVE_FRAME, WRITE_MODE === 'socket' ? KEEPALIVE_CHUNK : null),
  KEEPALIVE_MS,
).unref();

function listen(req, res) {
  pendingListeners++;
  let open = true;
  res.on('close', () => {
    open = false;
    if (listeners.delete(res) && listeners.size === 0) {
      void syncSubscription();
    }
  });
  syncSubscription().then(
    () => {
      pendingListeners--;
      if (!open) {
        void syncSubscription();
        return;
      }
      listeners.add(res);
      if (nest) {
        nest.handle(req, res);
        return;
      }
      req.socket.setTimeout(0);
      req.socket.setNoDelay(true);
      res.writeHead(200, SSE_HEADERS);
      res.flushHeaders();
    },
    () => {
      pendingListeners--;
      sendJson(res, 500, { message: 'Error establishing the event stream connection', code: 500 });
    },
  );
}

/** With BASELINE_WRITE=nest: a Nest application holding only the `@Sse()` and history routes. */
async function startNest() {
  const { Controller, Get, Module, Param, Sse } = await import('@nestjs/common');
  const { NestFactory } = await import('@nestjs/core');
  const { Subject, map, share } = await import('rxjs');
  const frames = new Subject();
  // `id: <id>\ndata: <json>\n\n` or the keep-alive comment, made a message once per event.
  const messages = frames.pipe(
    map((frame) => {
      const text = frame.toString('utf8');
      if (text.startsWith(':')) return { comment: 'keep-alive' };
      const newline = text.indexOf('\n');
      return { id: text.slice('id: '.length, newline), data: text.slice(newline + 7, -2) };
    }),
    share(),
  );
  // Plain JavaScript: the decorators applied by hand, as TypeScript would apply them.
  class ListenController {
    listen() {
      return messages;
    }
  }
  Sse('listen', { maxPendingDataLength: BUFFER_LIMIT })(
    ListenController.prototype,
    'listen',
    Object.getOwnPropertyDescriptor(ListenController.prototype, 'listen'),
  );
  Controller('api/webhooks/prevnames')(ListenController);
  class HistoryController {
    async history(userId) {
      const { rows } = await pool.query({ ...HISTORY_QUERY, values: [userId] });
      return { userId, prevnames: rows, code: 200 };
    }
  }
  Get(':userId/prevnames')(
    HistoryController.prototype,
    'history',
    Object.getOwnPropertyDescriptor(HistoryController.prototype, 'history'),
  );
  Param('userId')(HistoryController.prototype, 'history', 0);
  Controller('api/users')(HistoryController);
  class AppModule {}
  Module({ controllers: [ListenController, HistoryController] })(AppModule);
  const app = await NestFactory.create(AppModule, { logger: ['error'] });
  // As the service has it: no ETag hashed for answers that are never revalidated.
  app.getHttpAdapter().getInstance().set('etag', false);
  await app.init();
  return { handle: app.getHttpAdapter().getInstance(), next: (frame) => frames.next(frame) };
}
const nest = WRITE_MODE === 'nest' ? await startNest() : null;

// --- publish ----------------------------------------------------------------------------

const TYPES = new Set(['username', 'displayname']);

function validEvent(body) {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) {
    return false;
  }
  const { userId, type, name, changedAt } = body;
  return (
    typeof userId === 'string' &&
    userId.length > 0 &&
    userId.length <= 64 &&
    TYPES.has(type) &&
    typeof name === 'string' &&
    name.length > 0 &&
    name.length <= 256 &&
    typeof changedAt === 'string' &&
    /(Z|[+-]\d\d:\d\d)$/.test(changedAt) &&
    !Number.isNaN(Date.parse(changedAt))
  );
}

async function publish(event) {
  const changedAt = new Date(event.changedAt).toISOString();
  const params = [event.userId, event.type, event.name, changedAt];
  const client = await pool.connect();
  let published;
  try {
    try {
      const inserted = await client.query({ ...INSERT_QUERY, values: params });
      let id = inserted.rows[0]?.id;
      if (id === undefined) {
        id = (await client.query({ ...EXISTING_QUERY, values: params })).rows[0].id;
      }
      const data = JSON.stringify({
        userId: event.userId,
        type: event.type,
        name: event.name,
        changedAt,
      });
      // PUBLISH is queued on the one publisher connection before the lock is released,
      // and Redis runs one connection's commands in order: ids go out in lock order.
      published = pub.publish(CHANNEL, `id: ${id}\ndata: ${data}\n\n`);
      published.catch(() => {}); // awaited below; this only stops an early rejection escaping
    } finally {
      await client.query(UNLOCK_QUERY);
    }
  } catch (error) {
    // A connection that failed mid-way may still hold the lock: drop it rather than reuse it.
    client.release(error);
    throw error;
  }
  client.release();
  return published;
}

function postEvent(req, res) {
  if (!(req.headers['content-type'] ?? '').startsWith('application/json')) {
    sendJson(res, 415, { message: 'Content-Type must be application/json', code: 415 });
    return;
  }
  const chunks = [];
  let size = 0;
  req.on('data', (chunk) => {
    size += chunk.length;
    if (size > BODY_LIMIT) {
      sendJson(res, 413, { message: 'Request body too large', code: 413 });
      req.destroy();
      return;
    }
    chunks.push(chunk);
  });
  req.on('end', () => {
    let body;
    try {
      body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
    } catch {
      sendJson(res, 400, { message: 'Malformed JSON', code: 400 });
      return;
    }
    if (!validEvent(body)) {
      sendJson(res, 400, { message: 'Invalid name change event', code: 400 });
      return;
    }
    publish(body).then(
      (receivers) =>
        receivers > 0
          ? sendJson(res, 200, { success: true })
          : sendJson(res, 500, {
              message: 'Failed to deliver event: no active listeners',
              code: 500,
            }),
      () => sendJson(res, 500, { message: 'Internal server error', code: 500 }),
    );
  });
}

// --- history ----------------------------------------------------------------------------

function getHistory(res, rawUserId) {
  let userId;
  try {
    userId = decodeURIComponent(rawUserId);
  } catch {
    sendJson(res, 400, { message: 'Invalid userId', code: 400 });
    return;
  }
  pool.query({ ...HISTORY_QUERY, values: [userId] }).then(
    (result) => sendJson(res, 200, { userId, prevnames: result.rows, code: 200 }),
    () => sendJson(res, 500, { message: 'Internal server error', code: 500 }),
  );
}

// --- HTTP -------------------------------------------------------------------------------

function sendJson(res, status, body) {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  const payload = JSON.stringify(body);
  res.writeHead(status, {
    'Content-Type': 'application/json; charset=utf-8',
    'Content-Length': Buffer.byteLength(payload),
  });
  res.end(payload);
}

const HISTORY_PATH = /^\/api\/users\/([^/]+)\/prevnames$/;

const server = http.createServer((req, res) => {
  const q = req.url.indexOf('?');
  const path = q === -1 ? req.url : req.url.slice(0, q);
  if (req.method === 'GET') {
    const match = HISTORY_PATH.exec(path);
    if (match && nest) {
      nest.handle(req, res);
      return;
    }
    if (match) {
      getHistory(res, match[1]);
      return;
    }
    if (path === '/api/webhooks/prevnames/listen') {
      listen(req, res);
      return;
    }
    if (path === '/api/health/ready') {
      pool.query('SELECT 1').then(
        () => sendJson(res, 200, { status: 'ok' }),
        () => sendJson(res, 503, { message: 'Not ready', code: 503 }),
      );
      return;
    }
  } else if (req.method === 'POST' && path === '/api/webhooks/prevnames') {
    postEvent(req, res);
    return;
  }
  sendJson(res, 404, { message: 'Not found', code: 404 });
});
server.keepAliveTimeout = 65_000;
server.listen(PORT, () =>
  process.stderr.write(`baseline (${WRITE_MODE} writes) listening on ${PORT}\n`),
);

let stopping = false;
function shutdown() {
  if (stopping) {
    return;
  }
  stopping = true;
  setTimeout(() => process.exit(0), 3_000).unref();
  for (const res of listeners) {
    res.end();
  }
  listeners.clear();
  server.close();
  server.closeAllConnections();
  Promise.allSettled([pool.end(), pub.quit(), sub.quit()]).then(() => process.exit(0));
}
process.on('SIGTERM', shutdown);
process.on('SIGINT', shutdown);
