import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type {
  EventFilter,
  NameEventLogRepository,
} from '../name-events/name-event-log.repository.js';
import type { StoredNameEvent } from '../name-events/name-event.types.js';
import type { NameEventRemovalsService } from '../name-events/index.js';
import type { Leases } from '../redis/index.js';
import type { SenderEndpoint, WebhookEndpointsRepository } from './webhook-endpoints.repository.js';
import { WebhookSendersService } from './webhook-senders.service.js';
import type { WebhooksMetrics } from './webhooks.metrics.js';

const event = (id: number, userId = 'kept'): StoredNameEvent => ({
  id: String(id),
  userId,
  type: 'username',
  name: `name ${id}`,
  changedAt: '2024-01-01T00:00:00.000Z',
});

/**
 * A sender against an event log and an endpoint row in memory, and a receiver on loopback
 * that answers 204 (after calling `beforeAnswer`, once, when it is set).
 */
describe('WebhookSendersService.deliver', () => {
  let server: Server;
  let url: string;
  const received: string[] = [];
  let beforeAnswer: (() => void) | undefined;

  beforeAll(async () => {
    server = createServer((req, res) => {
      const id = req.headers['webhook-id'] as string;
      received.push(id);
      req.resume();
      beforeAnswer?.();
      beforeAnswer = undefined;
      res.writeHead(204).end();
    });
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
  });

  afterAll(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });

  /** Runs a sender until `events` are all delivered; returns the limits each read asked for. */
  const run = async (
    log: StoredNameEvent[],
    heardEverywhere: boolean,
    /** Before the first answer: events removed from the log (`events.removed` heard). */
    erased?: string,
  ) => {
    received.length = 0;
    let endpoint: SenderEndpoint = {
      url,
      format: 'standard',
      secret: `whsec_${Buffer.alloc(32, 1).toString('base64')}`,
      userId: null,
      type: null,
      deliveredThrough: '0',
    };
    const limits: number[] = [];
    const stop = new AbortController();
    const last = log[log.length - 1].id;
    const endpoints = {
      findForSender: () => Promise.resolve(endpoint),
      delivered: (_id: string, _eventId: string | null, through: string) => {
        endpoint = { ...endpoint, deliveredThrough: through };
        if (through === last) stop.abort();
        return Promise.resolve(true);
      },
      failed: () => Promise.resolve(),
    } as unknown as WebhookEndpointsRepository;
    const eventLog = {
      findHandled: (_consumer: string, afterId: string, _filter: EventFilter, limit: number) => {
        limits.push(limit);
        const events = log.filter((e) => BigInt(e.id) > BigInt(afterId)).slice(0, limit);
        const through = events.length < limit ? last : events[events.length - 1].id;
        return Promise.resolve({ events, through });
      },
    } as unknown as NameEventLogRepository;
    const metrics = { attempts: { inc: () => undefined } };
    const senders = new WebhookSendersService(
      {} as Leases,
      endpoints,
      eventLog,
      { heardEverywhere } as NameEventRemovalsService,
      { allowPrivateTargets: true, pollMs: 50, leaseMs: 1_000 },
      metrics as unknown as WebhooksMetrics,
    );
    if (erased !== undefined) {
      beforeAnswer = () => {
        log.splice(0, log.length, ...log.filter((e) => e.userId !== erased));
        senders.removed();
      };
    }
    await senders['deliver']('1', stop.signal);
    return limits;
  };

  it('reads a batch and sends it in order, one request after the other', async () => {
    const limits = await run([event(1), event(2), event(3)], true);
    expect(received).toStrictEqual(['1', '2', '3']);
    expect(limits).toStrictEqual([100]);
  });

  it('reads one event before each attempt while removals elsewhere may go unheard', async () => {
    const limits = await run([event(1), event(2), event(3)], false);
    expect(received).toStrictEqual(['1', '2', '3']);
    expect(limits).toStrictEqual([1, 1, 1]);
  });

  it('drops what it read once events are removed, and reads again before the next attempt', async () => {
    const limits = await run([event(1), event(2, 'erased'), event(3)], true, 'erased');
    expect(received).toStrictEqual(['1', '3']);
    expect(limits).toStrictEqual([100, 100]);
  });
});
