import fc from 'fast-check';
import { JSON_TYPE } from './support/api.js';
import { useApp } from './support/app.js';
import { failTestsOnProcessFailures } from './support/process-spies.js';
import { rawRequest, type RawResponse } from './support/raw-http.js';

/** How many generated paths the property tries. */
const RUNS = 600;

describe('hostile input: generated history paths (fast-check)', () => {
  const fx = useApp();
  failTestsOnProcessFailures();
  let paths = 0;
  afterAll(() => process.stderr.write(`hostile paths: ${paths} tried\n`));

  /** A 200 with the history of exactly that id, or `{message, code}`: never a 5xx. */
  function expectHistoryAnswer(res: RawResponse, segment: string) {
    expect(res.status).toBeGreaterThanOrEqual(200);
    expect(res.status).toBeLessThan(500);
    expect(res.headers['content-type']).toBe(JSON_TYPE);
    const body = JSON.parse(res.body) as Record<string, unknown>;
    if (res.status === 200) {
      expect(Object.keys(body).sort()).toEqual(['code', 'prevnames', 'userId']);
      expect(body.userId).toBe(decodeURIComponent(segment));
      expect(Array.isArray(body.prevnames)).toBe(true);
      expect(body.code).toBe(200);
    } else {
      expect(Object.keys(body).sort()).toEqual(['code', 'message']);
      expect(typeof body.message).toBe('string');
      expect(body.code).toBe(res.status);
    }
    paths++;
  }

  const get = (path: string, extraHead = '') =>
    rawRequest(
      fx.port,
      `GET ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\n${extraHead}Connection: close\r\n\r\n`,
    );

  const pathChars = fc.constantFrom(..."abcXYZ019.-_~!$&'()*+,;=:@%/2Fe".split(''));
  const segment = fc.oneof(
    fc.string({ unit: 'binary', maxLength: 80 }).map((s) => encodeURIComponent(s.toWellFormed())),
    fc.string({ unit: pathChars, minLength: 1, maxLength: 40 }),
    fc.constantFrom(
      '..%2F..%2F',
      '..%2F..%2F..%2Fetc%2Fpasswd',
      '%2e%2e%2f%2e%2e%2f',
      '..%5C..%5C',
      '%252e%252e%252f',
      '%c0%ae%c0%ae%c0%af',
      '%00',
      '%ff',
      '%E0%A4%A',
      '%',
      '%zz',
      '..',
      '.',
      '%2E%2E',
      '~root',
      '%7B%22%24ne%22%3A1%7D',
    ),
    fc.integer({ min: 60, max: 12_000 }).map((n) => 'x'.repeat(n)),
    fc.integer({ min: 20, max: 3_000 }).map((n) => '%41'.repeat(n)),
  );
  const query = fc.oneof(
    fc.constant(''),
    fc.string({ unit: pathChars, maxLength: 30 }).map((q) => `?${q}`),
    fc.constantFrom(
      '?limit=1',
      '?limit=0',
      '?limit=1e3',
      '?limit=-1',
      '?after=x',
      '?before=2024-01-01T00:00:00Z',
      '?limit=1&limit=2',
      '?__proto__=1',
      '?constructor[prototype][x]=1',
    ),
  );

  it(`answers ${RUNS} generated paths with a history or {message, code}, never a 5xx`, async () => {
    await fc.assert(
      fc.asyncProperty(segment, query, async (seg, q) => {
        const res = await get(`/api/users/${seg}/prevnames${q}`);
        expectHistoryAnswer(res, seg);
        // A 404 only when the segment held a '/' (or was empty): another route, or none.
        if (res.status === 404) expect(seg.includes('/') || seg === '').toBe(true);
      }),
      { numRuns: RUNS },
    );
  }, 120_000);
});
