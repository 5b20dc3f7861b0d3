import { ExpressAdapter } from '@nestjs/platform-express';
import type { Express } from 'express';
import { IncomingMessage, ServerResponse, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { ExpressHttpAdapter } from './express-http-adapter.js';

/** Where a request's and a response's prototypes were when Node made them, and when Express answered. */
interface Seen {
  atBirth: { req: object | null; res: object | null };
  inHandler: { req: object | null; res: object | null };
  expressMethods: boolean;
}

/** An object's prototype (typed: Object.getPrototypeOf returns any). */
const prototypeOf = (value: object): object | null => Object.getPrototypeOf(value) as object | null;

/** Two GETs through an app served by `adapter`'s server: the answers, and what each saw. */
async function twoRequests(adapter: ExpressAdapter) {
  const app = adapter.getInstance<Express>();
  const seen: Seen[] = [];
  const births: Seen['atBirth'][] = [];
  app.get('/thing', (req, res) => {
    seen.push({
      atBirth: births[seen.length],
      inHandler: { req: prototypeOf(req), res: prototypeOf(res) },
      expressMethods: req.app === app && res.app === app && typeof res.json === 'function',
    });
    res.status(201).json({ path: req.path, host: req.get('host') });
  });
  adapter.initHttpServer({});
  const server = adapter.getHttpServer() as Server;
  // Before Express's handler: as Node's parser made them.
  server.prependListener('request', (req: IncomingMessage, res: ServerResponse) =>
    births.push({ req: prototypeOf(req), res: prototypeOf(res) }),
  );
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  try {
    const { port } = server.address() as AddressInfo;
    const bodies: unknown[] = [];
    for (let i = 0; i < 2; i++) {
      const res = await fetch(`http://127.0.0.1:${port}/thing`);
      expect(res.status).toBe(201);
      bodies.push(await res.json());
    }
    return { app, bodies, seen };
  } finally {
    await new Promise((resolve) => server.close(resolve));
  }
}

/**
 * Both requests saw these prototypes, by identity (prototypes have no enumerable properties
 * for a likeness check to tell apart), and Express's methods.
 */
function expectPrototypes(
  seen: Seen[],
  expected: { atBirth: { req: object; res: object }; inHandler: { req: object; res: object } },
): void {
  expect(seen).toHaveLength(2);
  for (const { atBirth, inHandler, expressMethods } of seen) {
    expect(atBirth.req).toBe(expected.atBirth.req);
    expect(atBirth.res).toBe(expected.atBirth.res);
    expect(inHandler.req).toBe(expected.inHandler.req);
    expect(inHandler.res).toBe(expected.inHandler.res);
    expect(expressMethods).toBe(true);
  }
}

describe('ExpressHttpAdapter', () => {
  it('makes requests and responses with Express prototypes from birth, so Express changes none', async () => {
    const { app, bodies, seen } = await twoRequests(new ExpressHttpAdapter());

    const host = expect.stringMatching(/^127\.0\.0\.1:\d+$/) as unknown;
    expect(bodies).toEqual([
      { path: '/thing', host },
      { path: '/thing', host },
    ]);
    const express = { req: app.request, res: app.response };
    expectPrototypes(seen, { atBirth: express, inHandler: express });
    // Express's own prototypes are still on the chain, one link down.
    expect(Object.getPrototypeOf(app.request)).toHaveProperty('get');
    expect(Object.getPrototypeOf(app.response)).toHaveProperty('json');
  });

  it("is needed: with Nest's own adapter, Express changes every request's prototypes", async () => {
    const { app, seen } = await twoRequests(new ExpressAdapter());

    expectPrototypes(seen, {
      atBirth: { req: IncomingMessage.prototype, res: ServerResponse.prototype },
      inHandler: { req: app.request, res: app.response },
    });
  });
});
