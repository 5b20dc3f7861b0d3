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

/**
 * What `adapter.reply()` sends for `body` in an app set up as the service's is (no ETag):
 * status, headers but Date, and body, for a GET and a HEAD.
 */
async function replies(adapter: ExpressAdapter, body: unknown, status: number) {
  const app = adapter.getInstance<Express>();
  app.disable('etag');
  app.all('/thing', (_req, res) => adapter.reply(res, body, status));
  adapter.initHttpServer({});
  const server = adapter.getHttpServer() as Server;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  try {
    const { port } = server.address() as AddressInfo;
    const answers = [];
    for (const method of ['GET', 'HEAD']) {
      const res = await fetch(`http://127.0.0.1:${port}/thing`, { method });
      const headers = Object.fromEntries(res.headers);
      delete headers.date;
      answers.push({ status: res.status, headers, body: await res.text() });
    }
    return answers;
  } finally {
    await new Promise((resolve) => server.close(resolve));
  }
}

describe('ExpressHttpAdapter', () => {
  // The canary of reply(): when Express changes what res.json() sends, this fails.
  it.each([
    ['an object', { userId: '1', prevnames: [{ name: 'é 😀 <b>' }], code: 200 }, 200],
    ['an array', [1, 'two', null], 201],
    ['an empty object', {}, 400],
  ])(
    "answers %s with the bytes and headers of Express's res.json()",
    async (_case, body, status) => {
      const ours = await replies(new ExpressHttpAdapter(), body, status);
      expect(ours).toEqual(await replies(new ExpressAdapter(), body, status));
      expect(ours[0]).toEqual({
        status,
        headers: {
          'content-type': 'application/json; charset=utf-8',
          'content-length': String(Buffer.byteLength(JSON.stringify(body))),
          connection: 'keep-alive',
          'keep-alive': 'timeout=5',
          'x-powered-by': 'Express',
        },
        body: JSON.stringify(body),
      });
    },
  );

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
