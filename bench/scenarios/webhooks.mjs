// Outbound webhooks: three endpoints on fast local receivers while publishes arrive at a
// steady rate (200/s for 60 s, listeners connected): each endpoint must get every event once,
// in id order, and keep up: the lag's p99 at most 1 s, and not growing through the run.
// Each receiver times publish→delivery from the event's name ("bench-<seq>-<sentUs>", sent
// on the same monotonic clock), so the lag is measured per event, not sampled.
import { createServer } from 'node:http';
import { Instance, ListenerFleet, Publisher } from '../lib/harness.mjs';
import { Histogram, nowUs } from '../lib/histogram.mjs';
import { n } from '../lib/report.mjs';

const ADMIN_TOKEN = 'bench-admin-token-0123456789';
const ENDPOINTS = 3;

/** A receiver that answers 204 at once and records each event's id and lag. */
async function startReceiver() {
  const received = { ids: [], lagUs: [], firstUs: 0, lastUs: 0 };
  const server = createServer((req, res) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      const now = nowUs();
      const { data } = JSON.parse(Buffer.concat(chunks).toString('utf8'));
      received.ids.push(BigInt(data.id));
      received.lagUs.push(now - Number(data.name.split('-')[2]));
      received.firstUs ||= now;
      received.lastUs = now;
      res.writeHead(204).end();
    });
  });
  server.keepAliveTimeout = 60_000;
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${server.address().port}/hook`,
    received,
    close: () => new Promise((resolve) => server.close(resolve).closeAllConnections()),
  };
}

/** What one endpoint got: every event once, in id order, and how late. */
function endpointFigures(received, expected, durationUs) {
  const ids = received.ids;
  const inOrder = ids.every((id, i) => i === 0 || id > ids[i - 1]);
  const lag = new Histogram();
  received.lagUs.forEach((us) => lag.record(us));
  // Bounded lag: the events of no later quarter of the run later than those of the first
  // (medians, with slack): a sender slower than the publishes falls further behind each second,
  // even if it catches up before the end.
  const quarter = Math.max(1, Math.floor(received.lagUs.length / 4));
  const median = (list) => {
    const h = new Histogram();
    list.forEach((us) => h.record(us));
    return h.quantile(0.5);
  };
  const quarters = [0, 1, 2, 3].map((q) =>
    median(received.lagUs.slice(q * quarter, q === 3 ? undefined : (q + 1) * quarter)),
  );
  const [early] = quarters;
  const late = Math.max(...quarters.slice(1));
  return {
    delivered: ids.length,
    exactlyOnceInOrder: ids.length === expected && inOrder,
    perSec: Math.round((ids.length * 1e6) / Math.max(1, durationUs)),
    lagP99S: lag.quantile(0.99) / 1e6,
    lagMaxS: lag.max / 1e6,
    lagBounded: late <= early * 2 + 250_000,
  };
}

export const webhooks = {
  name: 'webhooks',
  sides: ['service'],
  title: (p) =>
    `Webhooks: ${ENDPOINTS} endpoints, ${p.ratePerSec} publishes/s for ${p.durationMs / 1000} s (${n(p.listeners)} listeners)`,
  size: (q) =>
    q
      ? { listeners: 20, publishers: 4, ratePerSec: 50, durationMs: 5_000 }
      : { listeners: 100, publishers: 10, ratePerSec: 200, durationMs: 60_000 },
  metrics: [
    { key: 'publishPerSec', label: 'publish rate', unit: '/s', better: 'higher' },
    {
      key: 'deliveriesPerSec',
      label: 'deliveries/s per endpoint (slowest)',
      unit: '/s',
      better: 'higher',
    },
    {
      key: 'lagP99S',
      label: 'publish→delivery p99 (worst endpoint)',
      unit: 's',
      better: 'lower',
      // Issue 38: the endpoints keep up with 200 publishes/s.
      target: { op: '<=', value: 1 },
    },
    {
      key: 'lagBounded',
      label: 'lag bounded (not growing through the run)',
      unit: '',
      better: 'true',
    },
    {
      key: 'exactlyOnceInOrder',
      label: 'every event once, in id order, each endpoint',
      unit: '',
      better: 'true',
    },
  ],
  async run(ctx, target, { listeners, publishers, ratePerSec, durationMs }) {
    const database = await ctx.newDatabase();
    const instance = await Instance.start(ctx, target, {
      database,
      env: { ADMIN_TOKEN, WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true' },
    });
    const fleet = await ListenerFleet.start(ctx, listeners);
    const publisher = await Publisher.start(ctx, [instance.origin], publishers);
    const c = await fleet.connect([instance.origin], listeners);
    if (c.open < listeners) {
      throw new Error(`only ${c.open} of ${listeners} listeners connected`);
    }
    const receivers = await Promise.all(Array.from({ length: ENDPOINTS }, startReceiver));
    try {
      for (const receiver of receivers) {
        const res = await fetch(`${instance.origin}/api/webhook-endpoints`, {
          method: 'POST',
          headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
          body: JSON.stringify({ url: receiver.url }),
        });
        if (res.status !== 201) {
          throw new Error(`POST /api/webhook-endpoints: ${res.status} ${await res.text()}`);
        }
      }
      await ctx.pause(300);
      const startedUs = nowUs();
      const run = await publisher.run({
        concurrency: publishers,
        durationMs,
        ratePerSec,
        startSeq: ctx.nextSeq(10_000_000),
        maxEvents: 10_000_000,
      });
      await fleet.settle(run.ok);
      const deadline = Date.now() + (ctx.quick ? 20_000 : 120_000);
      while (receivers.some((r) => r.received.ids.length < run.ok) && Date.now() < deadline) {
        await ctx.pause(50);
      }
      const figures = receivers.map((r) =>
        endpointFigures(r.received, run.ok, r.received.lastUs - startedUs),
      );
      return {
        listeners: c.open,
        events: run.ok,
        publishPerSec: Math.round(run.perSec),
        deliveriesPerSec: Math.min(...figures.map((f) => f.perSec)),
        lagP99S: Math.max(...figures.map((f) => f.lagP99S)),
        lagMaxS: Math.max(...figures.map((f) => f.lagMaxS)),
        lagBounded: figures.every((f) => f.lagBounded),
        exactlyOnceInOrder: figures.every((f) => f.exactlyOnceInOrder),
        endpoints: figures,
      };
    } finally {
      await Promise.all(receivers.map((r) => r.close()));
    }
  },
};
