import { CursorSignerService } from '../src/cursors/cursor-signer.service.js';
import { encodeCursor } from '../src/history/history-cursor.js';
import { historyPath, NO_LISTENERS, PUBLISH, PUBLISHED } from './support/api.js';
import { useApp, type Backend, type TestApp } from './support/app.js';
import { cursorOfLink } from './support/cursors.js';
import { eventsOf, historyEntry, uniqueUserId, type NameEventBody } from './support/events.js';
import { http, post } from './support/http.js';

const backends: { name: string; backend: Backend }[] = [
  { name: 'PostgreSQL', backend: 'postgres' },
  { name: 'embedded PGlite', backend: 'embedded' },
];

const CURSOR_MESSAGE =
  "cursor must be one this service issued, in a Link header of this user's history";

/**
 * History reads that arrive together: each answer is exactly its own user's history, whatever
 * else was read beside it, and a bad read beside them (a forged cursor) fails alone. A read
 * shares a statement with others only by its validated user id.
 */
describe.each(backends)('history reads sent together on $name', ({ backend }) => {
  const fx = useApp({ backend });

  /** 120 users, some differing only in case or by a code point, with 0-3 names each. */
  const seedUsers = async () => {
    const users = Array.from({ length: 120 }, (_, i) => `${uniqueUserId('batch')}-${i}`);
    users.push(`${users[0]}-Case`, `${users[0]}-case`, `${users[1]}-\u00e9`, `${users[1]}-e\u0301`);
    const expected = new Map<string, NameEventBody[]>(users.map((userId) => [userId, []]));
    for (const [i, userId] of users.entries()) {
      const next = eventsOf(userId);
      for (let n = 0; n < i % 4; n++) {
        const body = next();
        expected.get(userId)!.push(body);
        // Nobody listens: the event is stored, and the answer says it reached no one.
        expect((await fx.publish(body)).body).toEqual(NO_LISTENERS);
      }
    }
    return { users, expected };
  };
  it('answers reads sent beside bad cursors each with its own answer, the bad ones 400', async () => {
    const { users, expected } = await seedUsers();
    const paged = users.filter((userId) => expected.get(userId)!.length === 3).slice(0, 20);
    const year0 = (userId: string) =>
      encodeCursor(fx.app.get(CursorSignerService), userId, {
        direction: 'next',
        position: { at: '0000-01-01T00:00:00.000000Z', id: '1' },
      });
    // Whole reads of every user, a second page of some, and a year-0000 cursor among every
    // ten reads (Postgres would refuse that time: once a 500 for every read sharing its statement).
    const reads: { userId: string; query: string; bad: boolean }[] = [];
    for (const [i, userId] of users.entries()) {
      reads.push({ userId, query: '', bad: false });
      if (i % 10 === 5)
        reads.push({ userId, query: `?limit=1&cursor=${await year0(userId)}`, bad: true });
    }
    for (const userId of paged) {
      const cursor = cursorOfLink((await fx.history(userId, '?limit=1')).headers.get('link'));
      reads.push({ userId, query: `?limit=1&cursor=${cursor}`, bad: false });
    }

    const answers = await Promise.all(reads.map(({ userId, query }) => fx.history(userId, query)));

    expect(answers.map(({ status, body }) => ({ status, body }))).toEqual(
      reads.map(({ userId, query, bad }) => {
        if (bad) return { status: 400, body: { message: CURSOR_MESSAGE, code: 400 } };
        const entries = expected.get(userId)!.map(historyEntry);
        return {
          status: 200,
          body: { userId, prevnames: query ? entries.slice(1, 2) : entries, code: 200 },
        };
      }),
    );
  });

  it('answers each of 250 concurrent GETs with its own user, duplicates and empty histories included', async () => {
    const { users, expected } = await seedUsers();
    const reads = [...users, ...users, ...users.slice(0, 2)]; // 250

    const answers = await Promise.all(reads.map((userId) => fx.history(userId)));

    expect(answers.map(({ status, body }) => ({ status, body }))).toEqual(
      reads.map((userId) => ({
        status: 200,
        body: { userId, prevnames: expected.get(userId)!.map(historyEntry), code: 200 },
      })),
    );
  });
});

/**
 * Read-your-writes across instances: once a POST to one instance is answered 200, a read
 * sent to another instance afterwards has the event, even while that instance is busy
 * answering other reads of the same user.
 */
describe('history after a POST, across two instances', () => {
  const fx = useApp();
  let b: TestApp;

  beforeAll(async () => {
    b = await fx.startInstance();
  });

  it('shows every acknowledged event to the next read on the other instance', async () => {
    const userId = uniqueUserId('ryw');
    const next = eventsOf(userId);
    // A listener, so that each POST is answered 200.
    await fx.listenTo(b, `?userId=${userId}`);
    let reading = true;
    // Reads of the same user kept in flight on B the whole time, so each checked read is sent
    // while others of the same user are under way.
    const background = Array.from({ length: 8 }, async () => {
      while (reading) await http(`${b.url}${historyPath(userId)}`);
    });
    const published: NameEventBody[] = [];
    const seen: number[] = [];
    try {
      for (let i = 0; i < 30; i++) {
        const body = next();
        const res = await post(`${fx.url}${PUBLISH}`, body);
        expect({ status: res.status, body: res.body }).toEqual({ status: 200, body: PUBLISHED });
        published.push(body);
        const read = await http<{ prevnames: unknown[] }>(`${b.url}${historyPath(userId)}`);
        seen.push(read.body.prevnames.length);
        expect(read.body).toEqual({ userId, prevnames: published.map(historyEntry), code: 200 });
      }
    } finally {
      reading = false;
      await Promise.all(background);
    }
    expect(seen).toEqual(published.map((_, i) => i + 1));
  });
});
