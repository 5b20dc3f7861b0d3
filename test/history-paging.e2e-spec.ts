/** Paging through a long history: RFC 8288 Link headers, `after`, `before`, `limit`. */
import {
  AWKWARD_USER,
  history,
  path,
  RUNS,
  target,
  time,
  USER,
  usePagedHistory,
} from './support/history-pages.js';

describe('paging through a history (RFC 8288 Link headers)', () => {
  const paging = usePagedHistory();

  it('answers the whole history, ordered by time then storage order, with no Link', async () => {
    const page = await paging.get(path());
    expect(page).toEqual({
      status: 200,
      body: { userId: USER, prevnames: history, code: 200 },
      link: null,
    });
  });

  it.each([1, 2, 3, 5, 7, 8, 12, 19, 56, 57, 58, 1000])(
    'visits every entry exactly once, in order, following next from ?limit=%i',
    async (limit) => {
      const pages = await paging.walk(`${path()}?limit=${limit}`, limit, 'next');
      expect(pages).toHaveLength(Math.ceil(history.length / limit));
      expect(pages.flat()).toEqual(history);
    },
  );

  it.each(RUNS.map((_, run) => time(run)))(
    'answers after=%s with the entries strictly after it, the whole run at that time left out',
    async (at) => {
      const after = history.filter((e) => e.changedAt > at);
      const whole = await paging.get(`${path()}?after=${at}`);
      expect(whole).toEqual({
        status: 200,
        body: { userId: USER, prevnames: after, code: 200 },
        link: null,
      });
      const pages = await paging.walk(`${path()}?limit=4&after=${at}`, 4, 'next');
      expect(pages.flat()).toEqual(after);
    },
  );

  it.each([
    [time(2), 1],
    [time(2), 3],
    [time(3), 5],
    [time(6), 4],
    [time(9), 20],
    ['2024-01-03T12:00:00.001Z', 5],
    ['2024-01-03T11:59:59.999Z', 5],
    ['2024-01-03T13:00:00.000+01:00', 2],
    [time(0), 3],
    ['2030-01-01T00:00:00Z', 6],
  ])(
    'answers before=%s&limit=%i with the entries closest before it, oldest first, prev leading back',
    async (at, limit) => {
      const instant = new Date(at).toISOString();
      const before = history.filter((e) => e.changedAt < instant);
      const page = await paging.get(`${path()}?before=${encodeURIComponent(at)}&limit=${limit}`);
      expect(page.status).toBe(200);
      expect(page.body).toEqual({ userId: USER, prevnames: before.slice(-limit), code: 200 });
      if (before.length <= limit) {
        expect(page.link).toBeNull();
        return;
      }
      // Walking back: each page comes before the one that linked to it.
      const pages = await paging.walk(
        `${path()}?before=${encodeURIComponent(at)}&limit=${limit}`,
        limit,
        'prev',
      );
      expect(pages.reverse().flat()).toEqual(before);
    },
  );

  it('keeps both bounds while paging between them', async () => {
    const [from, to] = [time(1), time(7)];
    const between = history.filter((e) => e.changedAt > from && e.changedAt < to);
    const forward = await paging.walk(`${path()}?after=${from}&before=${to}&limit=4`, 4, 'prev');
    // With `before`, a page is the entries closest to it: walking prev, newest pages first.
    expect(forward.reverse().flat()).toEqual(between);
    const first = await paging.get(`${path()}?after=${from}&before=${to}&limit=4`);
    expect(first.body.prevnames).toEqual(between.slice(-4));
  });

  it('ends a walk that lands exactly on the last entry without a next link', async () => {
    const page = await paging.get(`${path()}?limit=${history.length}`);
    expect(page.body.prevnames).toEqual(history);
    expect(page.link).toBeNull();
  });

  it('tells apart times within one millisecond: the cursor keeps microseconds', async () => {
    // Only SQL can store finer than a millisecond (the API parses to ms), so seeded here.
    const micros = ['.000300', '.000100', '.000200', '.000100', '.000999', '.000000'];
    for (const [i, fraction] of micros.entries()) {
      await paging.db.query(
        `INSERT INTO name_change_events (user_id, type, name, changed_at) VALUES ($1, $2, $3, $4)`,
        ['micro', 'username', `m${i}`, `2024-05-05T05:05:05${fraction}Z`],
      );
    }
    const expected = ['m5', 'm1', 'm3', 'm2', 'm0', 'm4'];
    for (const limit of [1, 2, 4]) {
      const pages = await paging.walk(`${path('micro')}?limit=${limit}`, limit, 'next', 'micro');
      expect(pages.flat()).toEqual(
        expected.map((name) => ({
          type: 'username',
          name,
          changedAt: '2024-05-05T05:05:05.000Z',
        })),
      );
    }
    const before = await paging.walk(
      `${path('micro')}?limit=1&before=2024-05-05T05:05:05.0002Z`,
      1,
      'prev',
      'micro',
    );
    expect(
      before
        .reverse()
        .flat()
        .map((e) => e.name),
    ).toEqual(['m5', 'm1', 'm3']);
  });

  it('escapes the user id in the link target, and the target works', async () => {
    const userId = AWKWARD_USER;
    const pages = await paging.walk(`${path(userId)}?limit=1`, 1, 'next', userId);
    expect(pages.flat().map((e) => e.name)).toEqual(['a', 'b', 'c']);
    const first = await paging.get(`${path(userId)}?limit=1`);
    expect(target(first.link, 'next')).toMatch(/^\/api\/users\/a%2Fb%20%3Cc%3E%22d\/prevnames\?/);
  });
});
