import { ExpressAdapter } from '@nestjs/platform-express';
import type { Express, Request, Response } from 'express';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { setFlagsFromString } from 'node:v8';
import { ExpressHttpAdapter } from './express-http-adapter.js';

// V8's own answer to "do these two objects share a hidden class?".
setFlagsFromString('--allow-natives-syntax');
const haveSameMap = new Function('a', 'b', 'return %HaveSameMap(a, b)') as (
  a: object,
  b: object,
) => boolean;

interface Seen {
  req: Request;
  res: Response;
  expressPrototypes: boolean;
}

/** Two GETs through an app served by `adapter`'s server; what each handler saw. */
async function twoRequests(adapter: ExpressAdapter): Promise<{ bodies: unknown[]; seen: Seen[] }> {
  const app = adapter.getInstance<Express>();
  const seen: Seen[] = [];
  app.get('/thing', (req, res) => {
    res.once('finish', () =>
      seen.push({
        req,
        res,
        expressPrototypes: req.app === app && res.app === app && typeof res.json === 'function',
      }),
    );
    res.status(201).json({ path: req.path, host: req.get('host') });
  });
  adapter.initHttpServer({});
  const server = adapter.getHttpServer() as Server;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  try {
    const { port } = server.address() as AddressInfo;
    const bodies: unknown[] = [];
    for (let i = 0; i < 2; i++) {
      const res = await fetch(`http://127.0.0.1:${port}/thing`);
      expect(res.status).toBe(201);
      bodies.push(await res.json());
    }
    return { bodies, seen };
  } finally {
    await new Promise((resolve) => server.close(resolve));
  }
}

describe('ExpressHttpAdapter', () => {
  it('serves Express requests whose hidden classes are shared from one request to the next', async () => {
    const { bodies, seen } = await twoRequests(new ExpressHttpAdapter());

    expect(bodies).toEqual([
      { path: '/thing', host: expect.stringMatching(/^127\.0\.0\.1:\d+$/) },
      { path: '/thing', host: expect.stringMatching(/^127\.0\.0\.1:\d+$/) },
    ]);
    expect(seen.map((s) => s.expressPrototypes)).toEqual([true, true]);
    expect(haveSameMap(seen[0].req, seen[1].req)).toBe(true);
    expect(haveSameMap(seen[0].res, seen[1].res)).toBe(true);
  });

  it("is needed: Nest's own adapter gives every request hidden classes of its own", async () => {
    const { seen } = await twoRequests(new ExpressAdapter());

    expect(seen.map((s) => s.expressPrototypes)).toEqual([true, true]);
    expect(haveSameMap(seen[0].req, seen[1].req)).toBe(false);
    expect(haveSameMap(seen[0].res, seen[1].res)).toBe(false);
  });
});
