import fc from 'fast-check';
import { JSON_TYPE } from './support/api.js';
import { useApp } from './support/app.js';
import { HISTORY, MALFORMED, nodeRefusal, VERSION } from './support/http-answers.js';
import { failTestsOnProcessFailures } from './support/process-spies.js';
import { parseResponse, rawExchange } from './support/raw-http.js';

/** How many generated request lines the property tries. */
const RUNS = 1_000;

const GOOD_REQUEST = `GET ${HISTORY} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n`;
const GOOD_ANSWER = '{"userId":"1","prevnames":[],"code":200}';

/** A request line as sent, and the answer RFC 9110 gives it. */
interface Case {
  line: string;
  /** What ends the request line and each header line: CRLF, or a bare LF. */
  eol: string;
  status: 400 | 505;
  /**
   * Refused by Node's parser, which answers by itself: a bare 400 that closes the connection,
   * and drops the answer in progress on it. Else the application's `{message, code}`.
   */
  byNode: boolean;
}

/** The only request lines Node's parser lets through with a version other than 1.x. */
const PASSES_PARSER = /^HTTP\/(2\.0|0\.9)$/;

// Not HEAD: a HEAD line the parser lets through (HTTP/0.9, HTTP/2.0) is answered without a body.
const methods = fc.constantFrom('GET', 'POST', 'PUT', 'DELETE', 'OPTIONS', 'PATCH');
const targets = fc.constantFrom(HISTORY, '/api/webhooks/prevnames', '/', '/api/x?y=1', '/a%20b');
const digit = fc.integer({ min: 0, max: 9 });

/** `HTTP/<major>.<minor>` with a major of 2 or more: well formed, but no version spoken here. */
const laterVersion = fc
  .tuple(fc.integer({ min: 2, max: 9 }), digit)
  .map(([major, minor]) => `HTTP/${major}.${minor}`);

/** Anything in the version's place that is not HTTP/1.0, HTTP/1.1 or HTTP/2.0 to 9.9. */
const garbledVersion = fc
  .oneof(
    fc.constantFrom(
      'HTTP/1.x',
      'HTTP/01.1',
      'HTTQ/1.1',
      'http/1.1',
      'HTTP/1',
      'HTTP/2',
      'HTTP/1.1.1',
      'HTTP/1.1 ',
      'HTTP /1.1',
      'HTTP1.1',
      'HTTP/-1.1',
      '',
    ),
    // Two digits where the grammar has one, and majors 0 and 1 with other minors.
    fc.tuple(fc.integer({ min: 10, max: 99 }), digit).map(([a, b]) => `HTTP/${a}.${b}`),
    fc.tuple(digit, fc.integer({ min: 10, max: 99 })).map(([a, b]) => `HTTP/${a}.${b}`),
    fc.tuple(fc.constantFrom(0, 1), digit).map(([a, b]) => `HTTP/${a}.${b}`),
    fc.string({ unit: fc.constantFrom(...'HTPQhtp/0129. x'.split('')), maxLength: 12 }),
  )
  .filter((version) => !/^HTTP\/(1\.[01]|[2-9]\.[0-9])$/.test(version));

const cases: fc.Arbitrary<Case> = fc.oneof(
  // 505: a well-formed line naming HTTP major 2 or later, when the parser lets it through.
  fc.tuple(methods, targets, laterVersion).map(([method, target, version]): Case => ({
    line: `${method} ${target} ${version}`,
    eol: '\r\n',
    status: PASSES_PARSER.test(version) ? 505 : 400,
    byNode: !PASSES_PARSER.test(version),
  })),
  // 400: a bare LF after the line, whatever version it names.
  fc
    .tuple(methods, targets, fc.oneof(laterVersion, fc.constantFrom('HTTP/1.1', 'HTTP/1.0')))
    .map(([method, target, version]): Case => ({
      line: `${method} ${target} ${version}`,
      eol: '\n',
      status: 400,
      byNode: true,
    })),
  // 400: a garbled version, or none (an HTTP/0.9 line).
  fc.tuple(methods, targets, garbledVersion).map(([method, target, version]): Case => ({
    line: `${method} ${target} ${version}`,
    eol: '\r\n',
    status: 400,
    byNode: !PASSES_PARSER.test(version),
  })),
  fc.tuple(methods, targets).map(([method, target]): Case => ({
    line: `${method} ${target}`,
    eol: '\r\n',
    status: 400,
    byNode: false,
  })),
);

/**
 * Of 10,000 generated bad requests, 89 used to get a 5xx (Node's HPE_INVALID_VERSION mapped
 * to 505 wholesale), which an operator's alerting counts as server faults. Now a well-formed
 * request line naming HTTP/2.0 is a 505, everything else a 400: Node's own for what its parser
 * refuses, the error contract's for what it lets through.
 */
describe('hostile input: generated request lines (fast-check)', () => {
  const fx = useApp();
  failTestsOnProcessFailures();
  const tried = { node: 0, 400: 0, 505: 0 };
  afterAll(() =>
    process.stderr.write(
      `request lines: ${tried.node} answered by Node (400), ${tried[400]} 400, ${tried[505]} 505\n`,
    ),
  );

  it(`answers ${RUNS} malformed request lines with a 400, and only well-formed HTTP/2+ ones with a 505`, async () => {
    await fc.assert(
      fc.asyncProperty(cases, fc.boolean(), async ({ line, eol, status, byNode }, afterGood) => {
        const request = `${line}${eol}Host: 127.0.0.1${eol}Connection: close${eol}${eol}`;
        let raw = await rawExchange(fx.port, [
          { send: afterGood ? GOOD_REQUEST + request : request },
        ]);
        if (byNode) {
          // Behind a good request too: Node's parser reads ahead, and drops the answer in progress.
          expect(raw).toBe(nodeRefusal(400));
          tried.node++;
          return;
        }
        // Behind a good request on the same connection, the bad one's answer follows the good one's.
        if (afterGood) {
          const first = parseResponse(Buffer.from(raw, 'latin1'));
          expect({ status: first.status, body: first.body.slice(0, GOOD_ANSWER.length) }).toEqual({
            status: 200,
            body: GOOD_ANSWER,
          });
          raw = raw.slice(raw.indexOf(GOOD_ANSWER) + GOOD_ANSWER.length);
        }
        const res = parseResponse(Buffer.from(raw, 'latin1'));
        const message = status === 505 ? VERSION : MALFORMED;
        expect({
          status: res.status,
          type: res.headers['content-type'],
          connection: res.headers.connection,
          body: res.body,
        }).toEqual({
          status,
          type: JSON_TYPE,
          connection: 'close',
          body: JSON.stringify({ message, code: status }),
        });
        tried[status]++;
      }),
      { numRuns: RUNS },
    );
  });
});
