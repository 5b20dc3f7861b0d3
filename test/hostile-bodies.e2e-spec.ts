import fc from 'fast-check';
import type pg from 'pg';
import { historyPath, JSON_TYPE, PUBLISH } from './support/api.js';
import { useApp } from './support/app.js';
import { nameEvent, type NameEventBody } from './support/events.js';
import { http } from './support/http.js';
import { failTestsOnProcessFailures } from './support/process-spies.js';
import {
  arbitraryBody,
  invalidBody,
  invalidUtf8Body,
  jsonContentType,
  oracle,
  serialisation,
  serialise,
  validBody,
} from './support/publish-arbitraries.js';
import { rawRequest } from './support/raw-http.js';
import type { SseStream } from './support/sse.js';

/** How many generated bodies each property tries (1,400 in all). */
const RUNS = { valid: 400, invalid: 600, arbitrary: 400 };

describe('hostile input: generated POST bodies (fast-check)', () => {
  const fx = useApp();
  failTestsOnProcessFailures();
  let client: pg.Client;
  const tried = { accepted: 0, refused: 0 };

  /** The test's own stream of everything, opened before it sends anything. */
  let watcher: SseStream;
  /** Where the watcher's stream starts: events stored by this test come after it. */
  let startId: bigint;
  /** Events the watcher must have received so far (one per accepted POST, repeats included). */
  let delivered: number;
  /** The stored id of each event accepted in this test, by its four fields. */
  let stored: Map<string, string>;

  beforeAll(async () => {
    client = await fx.db.connect();
  });

  afterAll(() => {
    process.stderr.write(`hostile bodies: ${tried.accepted} accepted, ${tried.refused} refused\n`);
  });

  beforeEach(async () => {
    watcher = await fx.listen();
    expect(watcher.status).toBe(200);
    await watcher.until((s) => s.messages.length > 0);
    startId = BigInt(watcher.messages[0].id!);
    delivered = 0;
    stored = new Map();
  });

  const rowCount = async () =>
    (await client.query<{ n: number }>('SELECT count(*)::int AS n FROM name_change_events')).rows[0]
      .n;

  /** POSTs `body` as is; `contentType` null sends none (fetch then says text/plain). */
  const send = (body: string | Buffer, contentType: string | null = 'application/json') =>
    http(`${fx.url}${PUBLISH}`, {
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
  async function expectAccepted(res: { status: number; body: unknown }, event: NameEventBody) {
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
      fx.port,
      `GET ${historyPath(event.userId)} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n`,
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

  /**
   * The end of a test: a last event, accepted like the others, closes the stream of checks.
   * Nothing but the accepted events was broadcast before it, and each event stored during
   * the test (each new id) is one new row.
   */
  async function expectNothingElseBroadcastOrStored() {
    const sentinel = nameEvent({ name: 'last' });
    await expectAccepted(await send(JSON.stringify(sentinel)), sentinel);
    expect(watcher.events).toHaveLength(delivered);
    const newIds = new Set(watcher.events.map((e) => e.id!).filter((id) => BigInt(id) > startId));
    const [{ n }] = (
      await client.query<{ n: number }>(
        'SELECT count(*)::int AS n FROM name_change_events WHERE id > $1',
        [startId.toString()],
      )
    ).rows;
    expect(n).toBe(newIds.size);
  }

  it(`stores and streams ${RUNS.valid} valid bodies byte for byte, however they are written`, async () => {
    await fc.assert(
      fc.asyncProperty(validBody, serialisation, jsonContentType, async (b, how, type) => {
        const res = await send(serialise({ ...b, changedAt: b.changedAt.sent }, how), type);
        await expectAccepted(res, { ...b, changedAt: b.changedAt.utc });
      }),
      { numRuns: RUNS.valid },
    );
    await expectNothingElseBroadcastOrStored();
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
    await expectNothingElseBroadcastOrStored();
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
    await expectNothingElseBroadcastOrStored();
  }, 120_000);
});
