import { historyPath } from './support/api.js';
import { useApp, type AppFixture } from './support/app.js';
import { uniqueUserId } from './support/events.js';
import { http } from './support/http.js';

/** `count` entries of one user, stored straight in the table (a fixture), a second apart. */
async function storeHistory(fx: AppFixture, userId: string, count: number) {
  await fx.db.query(
    `INSERT INTO name_change_events (user_id, type, name, changed_at)
     SELECT $1, 'username', 'name-' || g, timestamptz '2024-01-01T00:00:00Z' + g * interval '1 s'
       FROM generate_series(1, $2::int) g`,
    [userId, count],
  );
  return Array.from({ length: count }, (_, i) => ({
    type: 'username',
    name: `name-${i + 1}`,
    changedAt: new Date(Date.UTC(2024, 0, 1) + (i + 1) * 1000).toISOString(),
  }));
}

const BUSY = {
  message: 'Too many long history reads in progress: retry shortly',
  code: 503,
};

/** What a whole read of the user's history answers when it is not refused. */
const whole = (userId: string, prevnames: unknown[]) => ({
  status: 200,
  body: { userId, prevnames, code: 200 },
  retryAfter: null,
});

/** 30 whole reads at once: each answer's status, body and Retry-After. */
async function readsAtOnce(fx: AppFixture, path: string) {
  return Promise.all(
    Array.from({ length: 30 }, async () => {
      const res = await http(`${fx.url}${path}`);
      return { status: res.status, body: res.body, retryAfter: res.headers.get('retry-after') };
    }),
  );
}

describe('whole reads of long histories, past HISTORY_LONG_READS and its queue', () => {
  const fx = useApp({ env: { HISTORY_LONG_READS: '1', HISTORY_LONG_READS_QUEUE: '0' } });

  it('answers each whole, or 503 with Retry-After, and the next read whole again', async () => {
    const userId = uniqueUserId('long');
    const prevnames = await storeHistory(fx, userId, 1_500);
    const answered = whole(userId, prevnames);
    const busy = { status: 503, body: BUSY, retryAfter: '1' };
    const answers = await readsAtOnce(fx, historyPath(userId));
    const kinds = answers.map((a) =>
      JSON.stringify(a) === JSON.stringify(answered)
        ? 'whole'
        : JSON.stringify(a) === JSON.stringify(busy)
          ? 'busy'
          : a,
    );
    expect(kinds.filter((k) => k !== 'whole' && k !== 'busy')).toEqual([]);
    expect(kinds).toContain('whole');
    expect(kinds).toContain('busy');
    expect(
      await readsAtOnce(fx, historyPath(userId, '?after=2000-01-01T00:00:00Z')),
    ).toContainEqual(busy);
    const again = await http(`${fx.url}${historyPath(userId)}`);
    expect({ status: again.status, body: again.body }).toEqual({
      status: 200,
      body: answered.body,
    });
  });

  it('never holds back a short history (1,000 entries or fewer)', async () => {
    const userId = uniqueUserId('short');
    const prevnames = await storeHistory(fx, userId, 1_000);
    const answers = await readsAtOnce(fx, historyPath(userId));
    expect(answers).toEqual(answers.map(() => whole(userId, prevnames)));
  });
});

describe('whole reads of long histories within the queue', () => {
  const fx = useApp({ env: { HISTORY_LONG_READS: '1', HISTORY_LONG_READS_QUEUE: '100' } });

  it('waits its turn rather than refusing: every read is answered whole', async () => {
    const userId = uniqueUserId('queued');
    const prevnames = await storeHistory(fx, userId, 1_200);
    const answers = await readsAtOnce(fx, historyPath(userId));
    expect(answers).toEqual(answers.map(() => whole(userId, prevnames)));
  });
});
