import { NameHistoryRepository } from '../src/name-events/name-history.repository.js';
import { historyPath, METRICS, NO_LISTENERS, PUBLISH, PUBLISHED } from './support/api.js';
import { useApp, type Backend, type TestApp } from './support/app.js';
import { eventsOf, historyEntry, uniqueUserId, type NameEventBody } from './support/events.js';
import { http, post } from './support/http.js';

const backends: { name: string; backend: Backend }[] = [
  { name: 'PostgreSQL', backend: 'postgres' },
  { name: 'embedded PGlite', backend: 'embedded' },
];

/**
 * Whole-history reads that arrive together share one statement: each answer must still be
 * exactly its own user's history, whatever else was read beside it.
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
  /** The count and sum of the reads-per-statement histogram. */
  const statements = async () => {
    const text = (await http<string>(`${fx.url}${METRICS}`)).text;
    const value = (name: string) =>
      Number(
        new RegExp(`^name_history_history_reads_per_statement_${name} (\\d+)$`, 'm').exec(
          text,
        )?.[1],
      );
    return { count: value('count'), sum: value('sum') };
  };

  it('answers 250 reads asked at once in three statements, each read with its own user', async () => {
    const { users, expected } = await seedUsers();
    const reads = [...users, ...users, ...users.slice(0, 2)]; // 250
    const repository = fx.app.get(NameHistoryRepository);
    const before = await statements();

    const answers = await Promise.all(reads.map((userId) => repository.findHistory(userId)));

    expect(answers).toEqual(reads.map((userId) => expected.get(userId)!.map(historyEntry)));
    // At most 100 users a statement: 100, 100 and 50.
    expect(await statements()).toEqual({ count: before.count + 3, sum: before.sum + 250 });
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
    // Reads of the same user kept in flight on B the whole time, so each checked read joins
    // statements already under way.
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
