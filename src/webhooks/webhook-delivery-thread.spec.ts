import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { StoredNameEvent } from '../name-events/name-event.types.js';
import type { SenderEndpoint } from './webhook-deliveries.repository.js';
import { WebhookDeliveryThread } from './webhook-delivery-thread.js';
import type { WebhookQueueWatch } from './webhook-queue-watch.js';

/**
 * A stand-in for webhook-delivery.worker.js that speaks its protocol: a run's events are
 * delivered at once, but 'hold' waits for a cut (and answers with the stopped flag it saw) and
 * 'exit' ends the thread.
 */
const STAND_IN = `
import { parentPort } from 'node:worker_threads';
const held = new Map();
parentPort.on('message', (m) => {
  if (m.type === 'cut') {
    const stopped = held.get(m.runId);
    parentPort.postMessage({ type: 'end', runId: m.runId, at: 0,
      outcome: { kind: 'error', message: 'cut, stopped ' + Atomics.load(stopped, 0) } });
    return;
  }
  if (m.type !== 'run') return;
  for (const event of m.events) {
    if (event.id === 'exit') process.exit(3);
    if (event.id === 'hold') { held.set(m.runId, m.stopped); return; }
    parentPort.postMessage({ type: 'delivered', runId: m.runId, eventId: event.id });
  }
  parentPort.postMessage({ type: 'end', runId: m.runId, outcome: null, at: 1700000000000 });
});
`;

const ENDPOINT: SenderEndpoint = {
  url: 'http://127.0.0.1:1/hook',
  format: 'standard',
  secret: 'whsec_c2VjcmV0c2VjcmV0c2VjcmV0c2VjcmV0',
  gone: false,
};
const event = (id: string): StoredNameEvent => ({
  id,
  userId: '700000000000000001',
  type: 'username',
  name: 'before',
  changedAt: '2025-03-04T05:06:07.089Z',
});
const watch = {
  shared: { cells: new Int32Array(new SharedArrayBuffer(8)), index: 1 },
} as unknown as WebhookQueueWatch;

describe('WebhookDeliveryThread', () => {
  let dir: string;
  let thread: WebhookDeliveryThread;

  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'delivery-thread-'));
    writeFileSync(join(dir, 'stand-in.mjs'), STAND_IN);
  });
  afterEach(() => thread.onModuleDestroy());
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  const start = () =>
    (thread = new WebhookDeliveryThread(watch, () => pathToFileURL(join(dir, 'stand-in.mjs'))));
  const options = (signal = new AbortController().signal) => ({
    readAt: 0,
    allowPrivateTargets: false,
    signal,
  });

  it("tells of each event's 2xx, in order, then of the run's end", async () => {
    start();
    const delivered: string[] = [];
    const end = await thread.deliver(
      'e1',
      ENDPOINT,
      [event('1'), event('2'), event('3')],
      options(),
      (id) => delivered.push(id),
    );
    expect(delivered).toEqual(['1', '2', '3']);
    expect(end).toEqual({ outcome: null, at: new Date(1700000000000) });
  });

  it('stops a run when its signal aborts: the flag is set before the thread hears of it', async () => {
    start();
    const stop = new AbortController();
    const delivered: string[] = [];
    const run = thread.deliver(
      'e1',
      ENDPOINT,
      [event('1'), event('hold')],
      options(stop.signal),
      (id) => delivered.push(id),
    );
    stop.abort();
    expect((await run).outcome).toEqual({ kind: 'error', message: 'cut, stopped 1' });
    expect(delivered).toEqual(['1']);
  });

  it('ends the runs of a thread that died with an error, and starts another for the next', async () => {
    start();
    const held = thread.deliver('e1', ENDPOINT, [event('hold')], options(), () => undefined);
    const dying = thread.deliver('e2', ENDPOINT, [event('exit')], options(), () => undefined);
    const reason = { kind: 'error', message: 'the delivery thread stopped (exit code 3)' };
    expect((await held).outcome).toEqual(reason);
    expect((await dying).outcome).toEqual(reason);

    const delivered: string[] = [];
    const end = await thread.deliver('e1', ENDPOINT, [event('4')], options(), (id) =>
      delivered.push(id),
    );
    expect(delivered).toEqual(['4']);
    expect(end.outcome).toBeNull();
  });
});
