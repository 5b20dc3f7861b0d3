// SSE listener load: thousands of raw TCP connections reading
// GET /api/webhooks/prevnames/listen, spread over several loopback source addresses so the
// ephemeral ports of one address are not the limit. Frames are parsed cheaply (an event's
// JSON is parsed once per process, cached by its id) and every delivery is timed against
// the send time that the publisher wrote into the event's name ("bench-<seq>-<sentUs>").
//
// Forked by bench/run.mjs; driven over IPC (see bench/lib/rpc.mjs).
import net from 'node:net';
import { Histogram, nowUs } from '../lib/histogram.mjs';
import { notifyParent, serveRpc } from '../lib/rpc.mjs';

const NAME_PATTERN = /^bench-(\d+)-(\d+)$/;
const EVENT_CACHE_LIMIT = 100_000;

const conns = [];
let open = 0;
let latency = new Histogram();
let seqCount = new Int32Array(0);
let notifyDone = false;
const eventCache = new Map();
let counters = freshCounters();
const failures = {};

function freshCounters() {
  return { frames: 0, events: 0, comments: 0, otherFrames: 0, badEvents: 0 };
}

class Conn {
  constructor(index) {
    this.index = index;
    this.socket = null;
    this.status = 0;
    this.inBody = false;
    this.head = '';
    this.chunked = false;
    this.need = 0; // bytes left in the current chunk
    this.skip = 0; // CRLF bytes after a chunk
    this.sizeLine = '';
    this.text = ''; // SSE text not yet split into frames
    this.lastId = 0;
    this.unique = 0;
    this.duplicates = 0;
    this.outOfOrder = 0;
    this.comments = 0;
    this.closed = false;
  }
}

/** Consumes one 'data' chunk (latin1, so string length = byte count). */
function onData(c, piece) {
  const recvUs = nowUs();
  if (!c.inBody) {
    c.head += piece;
    const end = c.head.indexOf('\r\n\r\n');
    if (end === -1) {
      if (c.head.length > 16_384) {
        c.socket.destroy(new Error('response head too large'));
      }
      return;
    }
    const head = c.head;
    c.head = '';
    c.status = Number(head.slice(9, 12));
    c.chunked = /\r\ntransfer-encoding:[ \t]*chunked/i.test(head);
    c.inBody = true;
    c.onHead?.();
    piece = head.slice(end + 4);
    if (piece.length === 0) {
      return;
    }
  }
  if (c.status !== 200) {
    return;
  }
  if (!c.chunked) {
    c.text += piece;
  } else {
    let i = 0;
    const n = piece.length;
    while (i < n) {
      if (c.need > 0) {
        const take = Math.min(c.need, n - i);
        c.text += i === 0 && take === n ? piece : piece.slice(i, i + take);
        i += take;
        c.need -= take;
        if (c.need === 0) {
          c.skip = 2;
        }
      } else if (c.skip > 0) {
        i++;
        c.skip--;
      } else {
        const nl = piece.indexOf('\n', i);
        if (nl === -1) {
          c.sizeLine += piece.slice(i);
          break;
        }
        const size = parseInt(c.sizeLine + piece.slice(i, nl), 16);
        c.sizeLine = '';
        i = nl + 1;
        if (size === 0) {
          c.socket.end();
          break;
        }
        c.need = size;
      }
    }
  }
  let start = 0;
  let end;
  const text = c.text;
  while ((end = text.indexOf('\n\n', start)) !== -1) {
    onFrame(c, text, start, end, recvUs);
    start = end + 2;
  }
  c.text = start === 0 ? text : text.slice(start);
}

const NCHAN_ID = /^(\d+):(\d+)$/;

/**
 * An event id as a number that grows with the stream: the service's ids are numbers; nchan's
 * are `<seconds>:<n-th message of that second>`. NaN when there is none.
 */
function idOrder(id) {
  if (id === null) {
    return NaN;
  }
  const nchan = NCHAN_ID.exec(id);
  return nchan ? Number(nchan[1]) * 1e6 + Number(nchan[2]) : Number(id);
}

function onFrame(c, text, start, end, recvUs) {
  counters.frames++;
  if (text.charCodeAt(start) === 58 /* ':' */) {
    counters.comments++;
    c.comments++;
    return;
  }
  let id = null;
  let data = null;
  for (const line of text.slice(start, end).split('\n')) {
    if (line.startsWith('id:')) {
      id = line.slice(3).trim();
    } else if (line.startsWith('data:')) {
      const value = line.charCodeAt(5) === 32 ? line.slice(6) : line.slice(5);
      data = data === null ? value : `${data}\n${value}`;
    }
  }
  if (data === null) {
    counters.otherFrames++;
    return;
  }
  let ev = id === null ? undefined : eventCache.get(id);
  if (ev === undefined) {
    ev = { seq: -1, sentUs: 0, idNum: idOrder(id) };
    try {
      const match = NAME_PATTERN.exec(JSON.parse(data).name);
      if (match) {
        ev.seq = Number(match[1]);
        ev.sentUs = Number(match[2]);
      }
    } catch {
      // counted below as a bad event
    }
    if (id !== null) {
      if (eventCache.size >= EVENT_CACHE_LIMIT) {
        eventCache.clear();
      }
      eventCache.set(id, ev);
    }
  }
  counters.events++;
  if (ev.seq < 0) {
    counters.badEvents++;
  } else {
    latency.record(recvUs - ev.sentUs);
    if (ev.seq < seqCount.length) {
      const n = ++seqCount[ev.seq];
      if (notifyDone && n === open) {
        notifyParent('done', ev.seq);
      }
    }
  }
  if (Number.isNaN(ev.idNum) || ev.idNum > c.lastId) {
    c.lastId = ev.idNum || c.lastId;
    c.unique++;
  } else if (ev.idNum === c.lastId) {
    c.duplicates++;
  } else {
    c.outOfOrder++;
  }
}

function fail(code) {
  failures[code] = (failures[code] ?? 0) + 1;
}

/** Opens one SSE connection; resolves true once the 200 head arrived, false on failure. */
function openOne(c, origin, localAddress, path, timeoutMs) {
  return new Promise((resolve) => {
    let settled = false;
    const settle = (ok, code) => {
      if (!settled) {
        settled = true;
        clearTimeout(timer);
        if (!ok) {
          fail(code);
          c.socket.destroy();
        }
        resolve(ok);
      }
    };
    const timer = setTimeout(() => settle(false, 'handshake timeout'), timeoutMs);
    const socket = net.connect({ host: origin.host, port: origin.port, localAddress });
    c.socket = socket;
    socket.setEncoding('latin1');
    socket.on('connect', () => {
      socket.write(
        `GET ${path} HTTP/1.1\r\nHost: ${origin.host}:${origin.port}\r\nAccept: text/event-stream\r\nCache-Control: no-cache\r\n\r\n`,
      );
    });
    c.onHead = () => {
      c.onHead = null;
      if (c.status === 200) {
        open++;
        settle(true);
      } else {
        settle(false, `status ${c.status}`);
      }
    };
    socket.on('data', (piece) => onData(c, piece));
    socket.on('error', (error) => settle(false, error.code ?? error.message));
    socket.on('close', () => {
      if (c.status === 200 && !c.closed) {
        c.closed = true;
        open--;
      }
      settle(false, 'closed during handshake');
    });
  });
}

async function connect({
  origins,
  path,
  count,
  concurrency = 200,
  sources = ['127.0.0.1'],
  timeoutMs = 60_000,
}) {
  const started = Date.now();
  const deadline = started + timeoutMs;
  const first = conns.length;
  for (let i = 0; i < count; i++) {
    conns.push(new Conn(first + i));
  }
  let next = first;
  let ok = 0;
  const worker = async () => {
    while (next < conns.length && Date.now() < deadline) {
      const c = conns[next++];
      const origin = origins[c.index % origins.length];
      const source = sources[Math.floor(c.index / origins.length) % sources.length];
      if (
        await openOne(c, origin, source, path, Math.max(1, Math.min(15_000, deadline - Date.now())))
      ) {
        ok++;
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, count) }, worker));
  return {
    requested: count,
    connected: ok,
    open,
    failures: { ...failures },
    ms: Date.now() - started,
  };
}

function expectSeqs({ maxSeq, notify }) {
  seqCount = new Int32Array(maxSeq);
  notifyDone = Boolean(notify);
  return { open };
}

function reset() {
  latency = new Histogram();
  counters = freshCounters();
  for (const c of conns) {
    c.unique = 0;
    c.duplicates = 0;
    c.outOfOrder = 0;
    c.comments = 0;
  }
  return { open };
}

function stats({ fromSeq = 0, toSeq = 0 } = {}) {
  let unique = 0;
  let duplicates = 0;
  let outOfOrder = 0;
  let minUnique = Infinity;
  let maxUnique = 0;
  let withComment = 0;
  let openNow = 0;
  for (const c of conns) {
    if (c.status !== 200 || c.closed) {
      continue;
    }
    openNow++;
    unique += c.unique;
    duplicates += c.duplicates;
    outOfOrder += c.outOfOrder;
    minUnique = Math.min(minUnique, c.unique);
    maxUnique = Math.max(maxUnique, c.unique);
    if (c.comments > 0) {
      withComment++;
    }
  }
  // Per event: how many of it arrived here, against the number of open listeners.
  let seqsComplete = 0;
  let seqsShort = 0;
  let seqsOver = 0;
  for (let s = fromSeq; s < Math.min(toSeq, seqCount.length); s++) {
    if (seqCount[s] === openNow) {
      seqsComplete++;
    } else if (seqCount[s] < openNow) {
      seqsShort++;
    } else {
      seqsOver++;
    }
  }
  const closedUnexpectedly = conns.filter((c) => c.status === 200 && c.closed).length;
  return {
    open: openNow,
    closedUnexpectedly,
    ...counters,
    unique,
    duplicates,
    outOfOrder,
    minUnique: openNow ? minUnique : 0,
    maxUnique,
    listenersWithKeepAlive: withComment,
    seqsComplete,
    seqsShort,
    seqsOver,
    latency: latency.toJSON(),
    memory: process.memoryUsage().rss,
  };
}

async function close() {
  for (const c of conns) {
    c.closed = true;
    c.socket?.destroy();
  }
  conns.length = 0;
  open = 0;
  return { closed: true };
}

serveRpc({ connect, expectSeqs, reset, stats, close });
