import { redisEnv, startApp, type TestApp } from './support/app.js';
import { TestDatabase } from './support/database.js';
import { http } from './support/http.js';
import { SseStream } from './support/sse.js';

const PUBLISH = '/api/webhooks/prevnames';
const REFUSED = { message: 'Unsupported charset: request bodies must be UTF-8 JSON', code: 415 };

const event = (name: string, userId = 'charsets') => ({
  userId,
  type: 'username',
  name,
  changedAt: '2024-06-07T15:30:00.000Z',
});

/** The same text as UTF-16 big-endian: UTF-16LE with each pair of bytes swapped. */
const utf16be = (text: string) => Buffer.from(text, 'utf16le').swap16();

/**
 * JSON here is UTF-8 (RFC 8259): a body that declares any other charset is a 415, and is
 * neither decoded in that charset, nor stored, nor broadcast.
 */
describe('charsets of JSON bodies', () => {
  let db: TestDatabase;
  let app: TestApp;
  let listener: SseStream;

  beforeAll(async () => {
    db = await TestDatabase.create();
    app = await startApp(redisEnv(db.url));
    // Someone listens: a body that got through would be stored and broadcast, and answered 200.
    listener = await SseStream.open(`${app.url}/api/webhooks/prevnames/listen`);
  });

  afterAll(async () => {
    listener.close();
    await app.close();
    await db.drop();
  });

  const send = (body: string | Buffer, contentType: string) =>
    http(`${app.url}${PUBLISH}`, {
      method: 'POST',
      headers: { 'content-type': contentType },
      body,
    });
  const stored = async () =>
    (await db.query<{ name: string }>('SELECT name FROM name_change_events ORDER BY id')).map(
      (row) => row.name,
    );

  const utf7 = JSON.stringify(event('a+AGE-b'));
  const plain = JSON.stringify(event('refused'));
  const refusals: [string, string, string | Buffer][] = [
    ['utf-7 (a+AGE-b would be stored as aab)', 'application/json; charset=utf-7', utf7],
    ['utf-16', 'application/json; charset=utf-16', Buffer.from(`\ufeff${plain}`, 'utf16le')],
    ['utf-16le', 'application/json; charset=utf-16le', Buffer.from(plain, 'utf16le')],
    ['utf-16be', 'application/json; charset=utf-16be', utf16be(plain)],
    ['UTF-16 in capitals', 'application/json; charset=UTF-16LE', Buffer.from(plain, 'utf16le')],
    ['utf-32', 'application/json; charset=utf-32', plain],
    ['latin1', 'application/json; charset=latin1', plain],
    ['iso-8859-1', 'application/json; charset=iso-8859-1', plain],
    ['windows-1252', 'application/json; charset=windows-1252', plain],
    ['us-ascii', 'application/json; charset=us-ascii', plain],
    ['utf8 (no hyphen)', 'application/json; charset=utf8', plain],
    ['a quoted utf-16', 'application/json; charset="utf-16le"', Buffer.from(plain, 'utf16le')],
    ['an unknown charset', 'application/json; charset=klingon', plain],
    ['an empty charset', 'application/json; charset=', plain],
    ['a charset with no value', 'application/json; charset', plain],
    ['utf-8, then utf-16', 'application/json; charset=utf-8; charset=utf-16le', plain],
    ['utf-16, then utf-8', 'application/json; charset=utf-16le; charset=utf-8', plain],
    ['a CHARSET in capitals', 'application/json; CHARSET=UTF-7', utf7],
    ['spaces around it', 'application/json ;  charset = utf-7 ', utf7],
  ];

  it.each(refusals)(
    'refuses a body declared as %s: 415, nothing stored or broadcast',
    async (_case, contentType, body) => {
      const res = await send(body, contentType);
      expect(res.status).toBe(415);
      expect(res.headers.get('content-type')).toBe('application/json; charset=utf-8');
      expect(res.body).toEqual(REFUSED);
      expect(await stored()).toEqual([]);
    },
  );

  it.each([
    ['no charset', 'application/json'],
    ['charset=utf-8', 'application/json; charset=utf-8'],
    ['charset=UTF-8', 'application/json;charset=UTF-8'],
    ['a quoted "utf-8"', 'application/json; charset="utf-8"'],
  ])('stores a UTF-8 body declared with %s byte for byte', async (_case, contentType) => {
    const name = `a+AGE-b ${contentType} 🦊`;
    const res = await send(JSON.stringify(event(name)), contentType);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ success: true });
    expect((await stored()).at(-1)).toBe(name);
  });

  it('broadcast only the accepted bodies, with the names as sent', async () => {
    await listener.untilEvents(4);
    expect(listener.events.map((e) => (e.data as { name: string }).name)).toEqual([
      'a+AGE-b application/json 🦊',
      'a+AGE-b application/json; charset=utf-8 🦊',
      'a+AGE-b application/json;charset=UTF-8 🦊',
      'a+AGE-b application/json; charset="utf-8" 🦊',
    ]);
  });

  it('reads a body as UTF-8 whatever else it could be: bytes that are not UTF-8 are a 400', async () => {
    const res = await send(Buffer.from(plain, 'utf16le'), 'application/json');
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ message: 'Request body is not valid JSON', code: 400 });
    const latin1 = await send(
      Buffer.from(JSON.stringify(event('caf\u00e9')), 'latin1'),
      'application/json',
    );
    expect(latin1.status).toBe(400);
    expect(latin1.body).toEqual({ message: 'Request body is not valid UTF-8', code: 400 });
    expect(await stored()).toHaveLength(4);
  });
});
