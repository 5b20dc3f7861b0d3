import fc from 'fast-check';
import type { NameEventBody } from './events.js';

/**
 * POST bodies for the property tests of the publish route (test/hostile-*.e2e-spec.ts):
 * generators of valid, invalid and arbitrary bodies, and the documented rules they are
 * judged by, written out again here independently of src/.
 */

const FIELDS = ['userId', 'type', 'name', 'changedAt'] as const;

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
export function oracle(body: unknown): NameEventBody | undefined {
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
export const HOSTILE = [
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

export const validBody = fc.record({
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

export const serialisation = fc.constantFrom('plain', 'indented', 'reordered', 'ascii-escaped');
export const jsonContentType = fc.constantFrom(
  'application/json',
  'application/json; charset=utf-8',
  'application/json;charset=UTF-8',
  'Application/JSON',
);

export function serialise(body: Record<string, unknown>, how: string): string {
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
export const invalidBody = fc.oneof(
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
export const invalidUtf8Body = fc
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
export const arbitraryBody = fc.oneof(
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
