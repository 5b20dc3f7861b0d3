import { EventSource } from 'eventsource';
import fc from 'fast-check';
import pg from 'pg';
import { redisEnv, startApp, type TestApp } from './support/app.js';
import { TestDatabase } from './support/database.js';
import { http } from './support/http.js';
import { spyOnProcessFailures, type ProcessSpies } from './support/process-spies.js';
import { rawRequest, type RawResponse } from './support/raw-http.js';
import { settle, SseStream } from './support/sse.js';

const LISTEN = '/api/webhooks/prevnames/listen';
const PUBLISH = '/api/webhooks/prevnames';
const FIELDS = ['userId', 'type', 'name', 'changedAt'] as const;
const JSON_TYPE = 'application/json; charset=utf-8';

/** How many generated inputs each property tries (about 2,000 in all). */
const RUNS = { valid: 400, invalid: 600, arbitrary: 400, paths: 600 };

interface Event {
  userId: string;
  type: 'username' | 'displayname';
  name: string;
  changedAt: string;
}

// ---------------------------------------------------------------------------------------
// The documented rules, written out again here (the oracle), independently of src/.

// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/;
// eslint-disable-next-line no-control-regex
const CONTROL_ALL = /[\u0000-\u001f\u007f-\u009f]/g;
const codePoints = (s: string) => [...s].length;

/** UTC ISO with milliseconds for a timestamp the contract accepts; undefined otherwise. */
function normalisedTimestamp(value: string): string | undefined {
  const m =
    /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?(?:Z|([+-])(\d{2}):(\d{2}))$/.exec(
      value,
    );
  if (!m) return undefined;
  const [, y, mo, d, h, mi, s = '0', fraction = '', sign, oh, om] = m;
  const date = new Date(0);
  date.setUTCFullYear(Number(y), Number(mo) - 1, Number(d));
  date.setUTCHours(Number(h), Number(mi), Number(s), Number(fraction.padEnd(3, '0').slice(0, 3)));
  const calendarOk =
    date.getUTCFullYear() === Number(y) &&
    date.getUTCMonth() === Number(mo) - 1 &&
    date.getUTCDate() === Number(d) &&
    Number(h) < 24 &&
    Number(mi) < 60 &&
    Number(s) < 60 &&
    (sign === undefined || (Number(oh) < 24 && Number(om) < 60));
  if (!calendarOk) return undefined;
  const offset = sign === undefined ? 0 : (sign === '-' ? -1 : 1) * (Number(oh) * 60 + Number(om));
  const utc = new Date(date.getTime() - offset * 60_000);
  if (utc.getUTCFullYear() < 1 || utc.getUTCFullYear() > 9999) return undefined;
  return utc.toISOString();
}

/** The event the contract makes of a parsed body, or undefined when it must be refused. */
function oracle(body: unknown): Event | undefined {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return undefined;
  const keys = Object.keys(body);
  if (keys.length !== 4 || !FIELDS.every((f) => keys.includes(f))) return undefined;
  const { userId, type, name, changedAt } = body as Record<string, unknown>;
  if (typeof userId !== 'string' || codePoints(userId) < 1 || codePoints(userId) > 64) return;
  if (!userId.isWellFormed() || CONTROL.test(userId)) return undefined;
  if (type !== 'username' && type !== 'displayname') return undefined;
  if (typeof name !== 'string' || codePoints(name) < 1 || codePoints(name) > 256) return;
  if (!name.isWellFormed() || name.includes('\u0000')) return undefined;
  if (typeof changedAt !== 'string') return undefined;
  const utc = normalisedTimestamp(changedAt);
  return utc === undefined ? undefined : { userId, type, name, changedAt: utc };
}

// ---------------------------------------------------------------------------------------
// Generators.

/** Pieces that break naive framing, escaping, rendering or path handling. */
const HOSTILE = [
  '\n',
  '\r',
  '\r\n',
  '\n\ndata: {"userId":"evil"}\n\n',
  'id: 99999999',
  'retry: 0',
  'event: x',
  ': comment',
  '\u2028',
  '\u2029',
  '\u0085',
  '"',
  '\\',
  '\\u0000',
  '</script><script>alert(1)</script>',
  '😀',
  '👨‍👩‍👧‍👦',
  '\ufeff',
  '\u200b',
  '\u202e',
  'e\u0301',
  '\u0001',
  '\u001b[2J',
  '\t',
  ' ',
  '%00',
  '%2F..%2F',
  '../',
  '..',
  '.',
  '/',
  '?',
  '#',
  '__proto__',
  'constructor',
  '{"a":1}',
  "'; DROP TABLE name_change_events; --",
];

const text = fc
  .array(
    fc.oneof(
      fc.string({ unit: 'binary', maxLength: 12 }),
      fc.string({ unit: 'grapheme', maxLength: 6 }),
      fc.constantFrom(...HOSTILE),
    ),
    { minLength: 1, maxLength: 40 },
  )
  .map((parts) => parts.join('').toWellFormed());

const firstCodePoints = (s: string, n: number) => [...s].slice(0, n).join('');
const validName = text
  .map((s) => firstCodePoints(s.replaceAll('\u0000', ''), 256))
  .filter((s) => s.length > 0);
const validUserId = text
  .map((s) => firstCodePoints(s.replace(CONTROL_ALL, ''), 64))
  .filter((s) => s.length > 0);

const pad = (n: number, width = 2) => String(n).padStart(width, '0');

/** A timestamp in one of the accepted forms, with the UTC string the service must send back. */
const validTimestamp = fc
  .record({
    utc: fc.date({
      min: new Date('0001-01-02T00:00:00.000Z'),
      max: new Date('9999-12-30T23:59:59.999Z'),
      noInvalidDate: true,
    }),
    offset: fc.oneof(fc.constant(null), fc.integer({ min: -(23 * 60 + 59), max: 23 * 60 + 59 })),
    minusZero: fc.boolean(),
    precision: fc.constantFrom('minutes', 'seconds', 'fraction'),
    digits: fc.integer({ min: 1, max: 9 }),
    extra: fc.stringMatching(/^\d{6}$/),
  })
  .map(({ utc, offset, minusZero, precision, digits, extra }) => {
    let ms = utc.getTime();
    if (precision === 'minutes') ms -= ms - Math.floor(ms / 60_000) * 60_000;
    if (precision === 'seconds') ms -= ms - Math.floor(ms / 1000) * 1000;
    if (precision === 'fraction' && digits < 3) {
      const step = 10 ** (3 - digits);
      ms -= (((ms % 1000) + 1000) % 1000) % step;
    }
    const local = new Date(ms + (offset ?? 0) * 60_000);
    let out =
      `${pad(local.getUTCFullYear(), 4)}-${pad(local.getUTCMonth() + 1)}-${pad(local.getUTCDate())}` +
      `T${pad(local.getUTCHours())}:${pad(local.getUTCMinutes())}`;
    if (precision !== 'minutes') out += `:${pad(local.getUTCSeconds())}`;
    if (precision === 'fraction') {
      out += `.${`${pad(local.getUTCMilliseconds(), 3)}${extra}`.slice(0, digits)}`;
    }
    if (offset === null) out += 'Z';
    else {
      const sign = offset < 0 || (offset === 0 && minusZero) ? '-' : '+';
      out += `${sign}${pad(Math.floor(Math.abs(offset) / 60))}:${pad(Math.abs(offset) % 60)}`;
    }
    return { sent: out, utc: new Date(ms).toISOString() };
  });

const validBody = fc.record({
  userId: validUserId,
  type: fc.constantFrom('username' as const, 'displayname' as const),
  name: validName,
  changedAt: validTimestamp,
});

/** Every non-ASCII character as a \u escape: the same JSON, other bytes. */
function asciiJson(value: unknown): string {
  return JSON.stringify(value).replace(
    /[\u007f-\uffff]/g,
    (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`,
  );
}

const serialisation = fc.constantFrom('plain', 'indented', 'reordered', 'ascii-escaped');
const jsonContentType = fc.constantFrom(
  'application/json',
  'application/json; charset=utf-8',
  'application/json;charset=UTF-8',
  'Application/JSON',
);

function serialise(body: Record<string, unknown>, how: string): string {
  if (how === 'indented') return JSON.stringify(body, null, 2);
  if (how === 'reordered') {
    return JSON.stringify(Object.fromEntries(Object.entries(body).reverse()));
  }
  if (how === 'ascii-escaped') return asciiJson(body);
  return JSON.stringify(body);
}

/** A JSON text with `key` added last: `{"__proto__": …}` written out, as an attacker would. */
function withKey(body: Record<string, unknown>, key: string, value: unknown): string {
  return `${JSON.stringify(body).slice(0, -1)},${JSON.stringify(key)}:${JSON.stringify(value)}}`;
}

const notAString = fc.oneof(
  fc.integer(),
  fc.double(),
  fc.boolean(),
  fc.constant(null),
  fc.array(fc.string(), { maxLength: 2 }),
  fc.dictionary(fc.string({ maxLength: 3 }), fc.string({ maxLength: 3 }), { maxKeys: 2 }),
);
const loneSurrogate = fc
  .tuple(fc.string({ maxLength: 3 }), fc.integer({ min: 0xd800, max: 0xdfff }))
  .map(([s, c]) => `${s}${String.fromCharCode(c)}`);
const withControl = fc
  .tuple(
    validUserId,
    fc.integer({ min: 0, max: 0x9f }).filter((c) => c < 0x20 || c >= 0x7f),
  )
  .map(([s, c]) => firstCodePoints(`${String.fromCharCode(c)}${s}`, 64));
const tooLong = (min: number) =>
  fc
    .integer({ min, max: min + 2000 })
    .chain((n) => fc.constantFrom('x', 'é', '😀').map((c) => c.repeat(n)));
const badTimestamp = fc.oneof(
  validTimestamp.map(({ sent }) => sent.replace(/(Z|[+-]\d{2}:\d{2})$/, '')),
  fc.constantFrom(
    '',
    '2024-02-30T00:00:00Z',
    '2023-02-29T00:00:00Z',
    '2024-13-01T00:00:00Z',
    '2024-00-10T00:00:00Z',
    '2024-06-31T00:00:00Z',
    '2024-06-07T24:00:00Z',
    '2024-06-07T23:60:00Z',
    '2024-06-07T15:30:00+24:00',
    '2024-06-07T15:30:00+05:60',
    '2024-06-07',
    'yesterday',
    'NaN',
    '0001-01-01T00:00:00+00:01',
    '9999-12-31T23:59:59-00:01',
  ),
  fc.string({ unit: 'binary', maxLength: 30 }).filter((s) => !/\d{4}-\d{2}/.test(s)),
);

/** A valid body broken in one of many ways, as the JSON text sent. */
const invalidBody = fc.oneof(
  fc.tuple(validBody, fc.constantFrom(...FIELDS)).map(([b, field]) => {
    const body: Record<string, unknown> = { ...b, changedAt: b.changedAt.sent };
    delete body[field];
    return JSON.stringify(body);
  }),
  fc
    .tuple(
      validBody,
      fc.oneof(
        fc.constantFrom('__proto__', 'constructor', 'prototype', 'toString', 'userid', 'id', ''),
        fc.string({ maxLength: 10 }).filter((k) => !(FIELDS as readonly string[]).includes(k)),
      ),
      fc.jsonValue({ maxDepth: 2 }),
    )
    .map(([b, key, value]) => withKey({ ...b, changedAt: b.changedAt.sent }, key, value)),
  fc
    .tuple(
      validBody,
      fc.oneof(
        fc.record({
          field: fc.constant('userId'),
          value: fc.oneof(fc.constant(''), tooLong(65), withControl, loneSurrogate, notAString),
        }),
        fc.record({
          field: fc.constant('type'),
          value: fc.oneof(
            fc.string({ maxLength: 12 }).filter((t) => t !== 'username' && t !== 'displayname'),
            fc.constantFrom('Username', 'USERNAME', 'display_name', 'nickname'),
            notAString,
          ),
        }),
        fc.record({
          field: fc.constant('name'),
          value: fc.oneof(
            fc.constant(''),
            tooLong(257),
            validName.map((n) => `${firstCodePoints(n, 255)}\u0000`),
            loneSurrogate,
            notAString,
          ),
        }),
        fc.record({ field: fc.constant('changedAt'), value: fc.oneof(badTimestamp, notAString) }),
      ),
    )
    .map(([b, { field, value }]) =>
      JSON.stringify({ ...b, changedAt: b.changedAt.sent, [field]: value }),
    ),
  validBody.map((b) => JSON.stringify([{ ...b, changedAt: b.changedAt.sent }])),
  fc.constantFrom('null', '0', '"event"', 'true', '[]', '{}'),
  fc.tuple(validBody, fc.nat()).map(([b, cut]) => {
    const json = JSON.stringify({ ...b, changedAt: b.changedAt.sent });
    return json.slice(0, cut % json.length);
  }),
  validBody.map((b) => `${JSON.stringify({ ...b, changedAt: b.changedAt.sent })}}`),
  validBody.map((b) => JSON.stringify({ ...b, changedAt: b.changedAt.sent }).replaceAll('"', "'")),
);

/** Bytes that are not UTF-8, spliced into a valid body's name. */
const invalidUtf8Body = fc
  .tuple(
    validBody,
    fc.constantFrom(
      [0xff],
      [0xfe, 0xff],
      [0xc0, 0xaf],
      [0xe0, 0x80, 0xaf],
      [0xed, 0xa0, 0x80],
      [0xe2, 0x82],
      [0xf4, 0x90, 0x80, 0x80],
      [0x80],
    ),
  )
  .map(([b, bytes]) => {
    const json = JSON.stringify({ ...b, changedAt: b.changedAt.sent, name: 'ab' });
    const at = json.indexOf('"ab"') + 2;
    return Buffer.concat([
      Buffer.from(json.slice(0, at)),
      Buffer.from(bytes),
      Buffer.from(json.slice(at)),
    ]);
  });

/** JSON of any shape, and objects with the four keys holding anything. */
const arbitraryBody = fc.oneof(
  fc.jsonValue({ maxDepth: 4 }).map((v) => JSON.stringify(v)),
  fc
    .record({
      userId: fc.oneof(fc.jsonValue({ maxDepth: 1 }), validUserId),
      type: fc.oneof(fc.jsonValue({ maxDepth: 1 }), fc.constantFrom('username', 'displayname')),
      name: fc.oneof(fc.jsonValue({ maxDepth: 1 }), validName),
      changedAt: fc.oneof(
        fc.jsonValue({ maxDepth: 1 }),
        fc.string({ maxLength: 30 }),
        validTimestamp.map((t) => t.sent),
      ),
    })
    .map((v) => JSON.stringify(v)),
  fc.string({ unit: 'binary', maxLength: 200 }),
);

// ---------------------------------------------------------------------------------------

describe('hostile input: generated bodies and paths, and hand-made attacks', () => {
  let db: TestDatabase;
  let app: TestApp;
  let port: number;
  let watcher: SseStream;
  let client: pg.Client;
  let spies: ProcessSpies;
  /** Events the watcher must have received so far (one per accepted POST, repeats included). */
  let delivered = 0;
  /** The stored id of each accepted event, by its four fields. */
  const stored = new Map<string, string>();
  const tried = { accepted: 0, refused: 0, paths: 0 };

  const rowCount = async () =>
    (await client.query<{ n: number }>('SELECT count(*)::int AS n FROM name_change_events')).rows[0]
      .n;

  /** POSTs `body` as is; `contentType` null sends none (fetch then says text/plain). */
  const send = (body: string | Buffer, contentType: string | null = 'application/json') =>
    http(`${app.url}${PUBLISH}`, {
      method: 'POST',
      headers: contentType === null ? {} : { 'content-type': contentType },
      body,
    });

  /** A 4xx with exactly `{message, code}`, and nothing stored or broadcast. */
  async function expectRefused(
    res: { status: number; headers: Headers; body: unknown },
    rowsBefore: number,
  ) {
    expect(res.status).toBeGreaterThanOrEqual(400);
    expect(res.status).toBeLessThan(500);
    expect(res.headers.get('content-type')).toBe(JSON_TYPE);
    expect(Object.keys(res.body as object).sort()).toEqual(['code', 'message']);
    const { message, code } = res.body as { message: unknown; code: unknown };
    expect(typeof message).toBe('string');
    expect((message as string).length).toBeGreaterThan(0);
    expect(code).toBe(res.status);
    expect(await rowCount()).toBe(rowsBefore);
    tried.refused++;
  }

  /** 200, stored once, streamed with exactly these bytes, and in the history. */
  async function expectAccepted(res: { status: number; body: unknown }, event: Event) {
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ success: true });
    delivered++;
    await watcher.untilEvents(delivered, 10_000);
    const message = watcher.messages.filter((m) => m.data !== undefined)[delivered - 1];
    expect(message.data).toBe(
      JSON.stringify({
        userId: event.userId,
        type: event.type,
        name: event.name,
        changedAt: event.changedAt,
      }),
    );
    const key = JSON.stringify([event.userId, event.type, event.name, event.changedAt]);
    const id = stored.get(key) ?? message.id!;
    expect(message.id).toBe(id);
    stored.set(key, id);
    const { rows } = await client.query<{ user_id: string; name: string; type: string }>(
      'SELECT user_id, type, name FROM name_change_events WHERE id = $1',
      [id],
    );
    expect(rows).toEqual([{ user_id: event.userId, type: event.type, name: event.name }]);
    const history = await rawRequest(
      port,
      `GET /api/users/${encodeURIComponent(event.userId)}/prevnames HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n`,
    );
    expect(history.status).toBe(200);
    expect(JSON.parse(history.body)).toMatchObject({ userId: event.userId, code: 200 });
    expect((JSON.parse(history.body) as { prevnames: unknown[] }).prevnames).toContainEqual({
      type: event.type,
      name: event.name,
      changedAt: event.changedAt,
    });
    tried.accepted++;
  }

  beforeAll(async () => {
    spies = spyOnProcessFailures();
    db = await TestDatabase.create();
    app = await startApp(redisEnv(db.url));
    port = Number(new URL(app.url).port);
    client = new pg.Client({ connectionString: db.url });
    await client.connect();
    watcher = await SseStream.open(`${app.url}${LISTEN}`);
    expect(watcher.status).toBe(200);
  });

  afterAll(async () => {
    watcher?.close();
    await client?.end();
    await app?.close();
    await db?.drop();
    spies?.stop();
    process.stderr.write(
      `hostile input: ${tried.accepted} accepted, ${tried.refused} refused, ${tried.paths} paths\n`,
    );
  });

  describe('generated POST bodies (fast-check)', () => {
    it(`stores and streams ${RUNS.valid} valid bodies byte for byte, however they are written`, async () => {
      await fc.assert(
        fc.asyncProperty(validBody, serialisation, jsonContentType, async (b, how, type) => {
          const res = await send(serialise({ ...b, changedAt: b.changedAt.sent }, how), type);
          await expectAccepted(res, { ...b, changedAt: b.changedAt.utc });
        }),
        { numRuns: RUNS.valid },
      );
    }, 120_000);

    it(`refuses ${RUNS.invalid} invalid bodies with a 4xx {message, code}, storing and broadcasting nothing`, async () => {
      await fc.assert(
        fc.asyncProperty(
          fc.oneof(
            {
              weight: 6,
              arbitrary: invalidBody.map((body) => ({ body, type: 'application/json' })),
            },
            {
              weight: 2,
              arbitrary: invalidUtf8Body.map((body) => ({ body, type: 'application/json' })),
            },
            {
              weight: 2,
              arbitrary: fc
                .tuple(
                  validBody,
                  fc.constantFrom(
                    null,
                    'text/plain',
                    'application/x-www-form-urlencoded',
                    'multipart/form-data; boundary=x',
                    'application/vnd.api+json',
                    'application/json; charset=latin1',
                    'application/json; charset=utf-16',
                  ),
                )
                .map(([b, type]) => ({
                  body: JSON.stringify({ ...b, changedAt: b.changedAt.sent }),
                  type,
                })),
            },
          ),
          async ({ body, type }) => {
            const before = await rowCount();
            await expectRefused(await send(body, type), before);
          },
        ),
        { numRuns: RUNS.invalid },
      );
    }, 120_000);

    it(`answers ${RUNS.arbitrary} arbitrary bodies as the documented rules say, never with a 5xx`, async () => {
      await fc.assert(
        fc.asyncProperty(arbitraryBody, async (body) => {
          let parsed: unknown;
          try {
            parsed = JSON.parse(body);
          } catch {
            parsed = undefined;
          }
          const expected = parsed === undefined ? undefined : oracle(parsed);
          const before = await rowCount();
          const res = await send(body);
          if (expected) await expectAccepted(res, expected);
          else await expectRefused(res, before);
        }),
        { numRuns: RUNS.arbitrary },
      );
    }, 120_000);

    it('broadcast nothing but the accepted events (a last one closes the stream of checks)', async () => {
      const last = {
        userId: 'sentinel',
        type: 'username',
        name: 'last',
        changedAt: '2024-01-01T00:00:00.000Z',
      } as const;
      await expectAccepted(await send(JSON.stringify(last)), last);
      await settle(200);
      expect(watcher.events).toHaveLength(delivered);
      expect(await rowCount()).toBe(stored.size);
      expect(spies.rejections).toEqual([]);
      expect(spies.exceptions).toEqual([]);
    });
  });

  describe('generated history paths (fast-check)', () => {
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
      tried.paths++;
    }

    const get = (path: string, extraHead = '') =>
      rawRequest(
        port,
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

    it(`answers ${RUNS.paths} generated paths with a history or {message, code}, never a 5xx`, async () => {
      await fc.assert(
        fc.asyncProperty(segment, query, async (seg, q) => {
          const res = await get(`/api/users/${seg}/prevnames${q}`);
          expectHistoryAnswer(res, seg);
          // A 404 only when the segment held a '/' (or was empty): another route, or none.
          if (res.status === 404) expect(seg.includes('/') || seg === '').toBe(true);
        }),
        { numRuns: RUNS.paths },
      );
      expect(spies.rejections).toEqual([]);
      expect(spies.exceptions).toEqual([]);
    }, 120_000);
  });

  describe('hand-made attacks', () => {
    const postBytes = (bytes: Buffer) =>
      Buffer.concat([
        Buffer.from(
          `POST ${PUBLISH} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: ${bytes.length}\r\nConnection: close\r\n\r\n`,
        ),
        bytes,
      ]);
    const post = (body: string) => postBytes(Buffer.from(body));
    const body = (fields: Record<string, unknown> = {}) =>
      JSON.stringify({
        userId: 'attacker',
        type: 'username',
        name: 'n',
        changedAt: '2024-06-07T15:30:00.000Z',
        ...fields,
      });
    const nested = (depth: number, inner = '1') =>
      `${'{"a":'.repeat(depth)}${inner}${'}'.repeat(depth)}`;
    const request = (line: string, head = '') =>
      `${line}\r\nHost: 127.0.0.1\r\n${head}Connection: close\r\n\r\n`;

    const cases: [string, string | Buffer, number, string][] = [
      [
        'a 1 MB body (Content-Length)',
        post(body({ name: 'x'.repeat(1024 * 1024) })),
        413,
        'Request body exceeds the 16 KiB limit',
      ],
      [
        'a 1 MB body (chunked)',
        `POST ${PUBLISH} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n100000\r\n${'{'.padEnd(0x100000, ' ')}\r\n0\r\n\r\n`,
        413,
        'Request body exceeds the 16 KiB limit',
      ],
      [
        'a 1 MB body that is not JSON',
        `POST ${PUBLISH} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: text/plain\r\nContent-Length: 1048576\r\nConnection: close\r\n\r\n${'x'.repeat(1048576)}`,
        415,
        'Content-Type must be application/json',
      ],
      [
        'objects nested 2,700 deep (15 KB)',
        post(nested(2_700)),
        400,
        'Request body must not nest more than 32 levels deep',
      ],
      [
        'arrays nested 8,000 deep',
        post(`${'['.repeat(8_000)}${']'.repeat(8_000)}`),
        400,
        'Request body must be a JSON object',
      ],
      [
        'deep nesting inside a field',
        post(body({ userId: JSON.parse(nested(40)) })),
        400,
        'Request body must not nest more than 32 levels deep',
      ],
      [
        'nesting 2,600 deep inside a field',
        post(body().replace('"attacker"', nested(2_600))),
        400,
        'Request body must not nest more than 32 levels deep',
      ],
      [
        'a __proto__ key',
        post(body().replace('{', '{"__proto__":{"polluted":true},')),
        400,
        'property __proto__ should not exist',
      ],
      [
        'a constructor.prototype key',
        post(body().replace('{', '{"constructor":{"prototype":{"polluted":true}},')),
        400,
        'property constructor should not exist',
      ],
      [
        'a __proto__ key inside a field',
        post(body().replace('"attacker"', '{"__proto__":{"polluted":true}}')),
        400,
        'userId must be a string',
      ],
      [
        'a NUL in the name',
        post(body({ name: 'a\u0000b' })),
        400,
        'name must not contain NUL characters or unpaired surrogates',
      ],
      [
        'a NUL in the user id',
        post(body({ userId: 'a\u0000b' })),
        400,
        'userId must not contain control characters or unpaired surrogates',
      ],
      [
        'a raw NUL byte inside a JSON string',
        post(body().replace('"n"', '"a\u0000b"')),
        400,
        'Request body is not valid JSON',
      ],
      [
        'a lone surrogate, escaped',
        post(body().replace('"n"', '"\\ud800"')),
        400,
        'name must not contain NUL characters or unpaired surrogates',
      ],
      [
        'invalid UTF-8 bytes (an overlong "/")',
        postBytes(
          Buffer.concat([
            Buffer.from(
              '{"userId":"u","type":"username","changedAt":"2024-06-07T15:30:00Z","name":"a',
            ),
            Buffer.from([0xc0, 0xaf]),
            Buffer.from('b"}'),
          ]),
        ),
        400,
        'Request body is not valid UTF-8',
      ],
      [
        'duplicate Content-Length',
        `POST ${PUBLISH} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 2\r\nContent-Length: 3\r\nConnection: close\r\n\r\n{}`,
        400,
        'Malformed HTTP request',
      ],
      [
        'Content-Length with Transfer-Encoding (smuggling)',
        `POST ${PUBLISH} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n0\r\n\r\n`,
        400,
        'Malformed HTTP request',
      ],
      [
        'a 100 KB user id in the URL',
        request(`GET /api/users/${'x'.repeat(100_000)}/prevnames HTTP/1.1`),
        431,
        'Request line and headers exceed the limits (16 KiB, 2000 header fields)',
      ],
      [
        'a 15 KB user id in the URL',
        request(`GET /api/users/${'x'.repeat(15_000)}/prevnames HTTP/1.1`),
        400,
        'userId must be between 1 and 64 characters long',
      ],
      [
        'a 20 KB header',
        request(`GET /api/users/1/prevnames HTTP/1.1`, `X-Flood: ${'y'.repeat(20_000)}\r\n`),
        431,
        'Request line and headers exceed the limits (16 KiB, 2000 header fields)',
      ],
      [
        '3,000 headers',
        request(
          `GET /api/users/1/prevnames HTTP/1.1`,
          Array.from({ length: 3_000 }, (_, i) => `X-F${i}: v\r\n`).join(''),
        ),
        431,
        'Request line and headers exceed the limits (16 KiB, 2000 header fields)',
      ],
      [
        'a raw 0xFF byte in the path',
        Buffer.concat([
          Buffer.from('GET /api/users/a'),
          Buffer.from([0xff]),
          Buffer.from('/prevnames HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n'),
        ]),
        400,
        'Malformed HTTP request',
      ],
      [
        'a raw NUL byte in the path',
        Buffer.concat([
          Buffer.from('GET /api/users/a'),
          Buffer.from([0x00]),
          Buffer.from('/prevnames HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n'),
        ]),
        400,
        'Malformed HTTP request',
      ],
      [
        '%00 in the user id',
        request(`GET /api/users/%00/prevnames HTTP/1.1`),
        400,
        'userId must not contain control characters or unpaired surrogates',
      ],
      [
        'an overlong UTF-8 dot-dot',
        request(`GET /api/users/%c0%ae%c0%ae/prevnames HTTP/1.1`),
        400,
        'Malformed URL: invalid percent-encoding',
      ],
      [
        'an unknown method',
        request(`FOO /api/users/1/prevnames HTTP/1.1`),
        400,
        'Malformed HTTP request',
      ],
      [
        'no Host header',
        `GET /api/users/1/prevnames HTTP/1.1\r\nConnection: close\r\n\r\n`,
        400,
        'Host header is required',
      ],
      [
        'TLS bytes on the plain port',
        Buffer.from([
          0x16, 0x03, 0x01, 0x00, 0xa5, 0x01, 0x00, 0x00, 0xa1, 0x03, 0x03, 0x0d, 0x0a, 0x0d, 0x0a,
        ]),
        400,
        'Malformed HTTP request',
      ],
      [
        'a 5,000-digit Last-Event-ID',
        request(`GET ${LISTEN} HTTP/1.1`, `Last-Event-ID: ${'9'.repeat(5_000)}\r\n`),
        400,
        'Last-Event-ID must be a stored event id (a non-negative integer)',
      ],
      [
        'a Last-Event-ID past the largest id',
        request(`GET ${LISTEN} HTTP/1.1`, 'Last-Event-ID: 9999999999999999999\r\n'),
        400,
        'Last-Event-ID must be a stored event id (a non-negative integer)',
      ],
      [
        'a lastEventId past the largest id',
        request(`GET ${LISTEN}?lastEventId=9999999999999999999 HTTP/1.1`),
        400,
        'lastEventId must be a stored event id (a non-negative integer)',
      ],
    ];

    it.each(
      cases.map(
        ([name, raw, status, message]) => [`${name} → ${status}`, raw, status, message] as const,
      ),
    )('%s', async (_case, raw, status, message) => {
      const before = await rowCount();
      const res = await rawRequest(port, raw);
      expect({ status: res.status, type: res.headers['content-type'] }).toEqual({
        status,
        type: JSON_TYPE,
      });
      expect(JSON.parse(res.body)).toEqual({ message, code: status });
      expect(await rowCount()).toBe(before);
      expect(({} as Record<string, unknown>).polluted).toBeUndefined();
      expect(Object.prototype).not.toHaveProperty('polluted');
    });

    it('survives a header flood below the limit: 1,000 headers, answered normally', async () => {
      const res = await rawRequest(
        port,
        request(
          'GET /api/users/1/prevnames HTTP/1.1',
          Array.from({ length: 1_000 }, (_, i) => `X-F${i}: v\r\n`).join(''),
        ),
      );
      expect(res.status).toBe(200);
      expect(JSON.parse(res.body)).toEqual({ userId: '1', prevnames: [], code: 200 });
    });

    it('keeps SSE framing intact for names that try to inject messages, for a real EventSource too', async () => {
      const userId = `framing-${Date.now()}`;
      const names = [
        '\n\ndata: {"userId":"evil","type":"username","name":"x","changedAt":"2024-01-01T00:00:00.000Z"}\n\n',
        'id: 99999999\nretry: 1\n\n',
        '\r\rdata: injected\r\r',
        '\r\n\r\nevent: error\r\n\r\n',
        ': comment\n\n',
        'line\u2028separator\u2029paragraph\u0085next',
        '\ufeffdata: bom',
        '</script><img src=x onerror=alert(1)>',
      ];
      const source = new EventSource(`${app.url}${LISTEN}?userId=${encodeURIComponent(userId)}`);
      const received: { data: string; lastEventId: string; type: string }[] = [];
      try {
        await new Promise<void>((resolve, reject) => {
          source.onopen = () => resolve();
          source.onerror = () => reject(new Error('EventSource failed to open'));
        });
        source.onmessage = (m: MessageEvent) =>
          received.push({ data: m.data as string, lastEventId: m.lastEventId, type: m.type });
        for (const [i, name] of names.entries()) {
          const res = await send(
            JSON.stringify({
              userId,
              type: 'displayname',
              name,
              changedAt: `2024-02-0${i + 1}T00:00:00Z`,
            }),
          );
          expect(res.status).toBe(200);
          delivered++;
        }
        const deadline = Date.now() + 10_000;
        while (received.length < names.length && Date.now() < deadline) await settle(20);
        await settle(200);
        expect(received.map((m) => (JSON.parse(m.data) as { name: string }).name)).toEqual(names);
        expect(received.every((m) => m.type === 'message' && /^\d+$/.test(m.lastEventId))).toBe(
          true,
        );
        expect(received.map((m) => (JSON.parse(m.data) as { userId: string }).userId)).toEqual(
          names.map(() => userId),
        );
      } finally {
        source.close();
      }
      await watcher.untilEvents(delivered);
    });

    it('never answered a 5xx, crashed, or rejected a promise unhandled', () => {
      expect(spies.rejections).toEqual([]);
      expect(spies.exceptions).toEqual([]);
    });
  });
});
