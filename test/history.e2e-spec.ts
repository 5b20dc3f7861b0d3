import { DataSource } from 'typeorm';
import { NameChangeEvent } from '../src/name-events/name-change-event.entity.js';
import { useApp, type Backend } from './support/app.js';
import { http } from './support/http.js';

type Seed = Pick<NameChangeEvent, 'userId' | 'type' | 'name'> & { changedAt: string };

const backends: { name: string; backend: Backend }[] = [
  { name: 'PostgreSQL', backend: 'postgres' },
  { name: 'embedded PGlite', backend: 'embedded' },
];

describe.each(backends)('GET /api/users/:userId/prevnames on $name', ({ backend }) => {
  const fx = useApp({ backend });

  const seed = (rows: Seed[]) =>
    fx.app
      .get(DataSource)
      .getRepository(NameChangeEvent)
      .insert(rows.map((row) => ({ ...row, changedAt: new Date(row.changedAt) })));
  const history = (path: string) => http(`${fx.url}/api/users/${path}`);
  /** Four names of `userId`, stored out of order, and one of another user. */
  const seedFourNames = (userId: string) =>
    seed([
      { userId, type: 'username', name: 'third', changedAt: '2024-06-07T15:30:00.000Z' },
      { userId, type: 'displayname', name: 'fourth', changedAt: '2024-06-07T15:30:00.000Z' },
      { userId, type: 'username', name: 'first', changedAt: '2023-01-01T00:00:00.000Z' },
      { userId, type: 'username', name: 'second', changedAt: '2024-06-07T17:29:59.999+02:00' },
      {
        userId: `not-${userId}`,
        type: 'username',
        name: 'not mine',
        changedAt: '2024-01-01T00:00:00.000Z',
      },
    ]);

  it('answers an empty history for an unknown user', async () => {
    const res = await history('123/prevnames');
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('application/json; charset=utf-8');
    expect(res.body).toEqual({ userId: '123', prevnames: [], code: 200 });
  });

  it('orders by changedAt, then by storage order for equal timestamps', async () => {
    await seedFourNames('order');
    const res = await history('order/prevnames');
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      userId: 'order',
      prevnames: [
        { type: 'username', name: 'first', changedAt: '2023-01-01T00:00:00.000Z' },
        { type: 'username', name: 'second', changedAt: '2024-06-07T15:29:59.999Z' },
        { type: 'username', name: 'third', changedAt: '2024-06-07T15:30:00.000Z' },
        { type: 'displayname', name: 'fourth', changedAt: '2024-06-07T15:30:00.000Z' },
      ],
      code: 200,
    });
  });

  it('pages with limit, before and after', async () => {
    await seedFourNames('paged');
    const page = await history('paged/prevnames?limit=2&after=2023-01-01T00:00:00.000Z');
    expect(page.status).toBe(200);
    expect(page.body).toEqual({
      userId: 'paged',
      prevnames: [
        { type: 'username', name: 'second', changedAt: '2024-06-07T15:29:59.999Z' },
        { type: 'username', name: 'third', changedAt: '2024-06-07T15:30:00.000Z' },
      ],
      code: 200,
    });
    const before = await history('paged/prevnames?before=2024-06-07T17:30:00%2B02:00');
    expect(before.body).toEqual({
      userId: 'paged',
      prevnames: [
        { type: 'username', name: 'first', changedAt: '2023-01-01T00:00:00.000Z' },
        { type: 'username', name: 'second', changedAt: '2024-06-07T15:29:59.999Z' },
      ],
      code: 200,
    });
  });

  it('returns unicode and emoji names byte-for-byte', async () => {
    const names = ['Zoë 🦊', '名前', 'quote " and \\ backslash', 'line\nbreak', '👨‍👩‍👧‍👦'];
    await seed(
      names.map((name, i) => ({
        userId: 'unicode',
        type: 'displayname' as const,
        name,
        changedAt: `2024-01-0${i + 1}T00:00:00.000Z`,
      })),
    );
    const res = await history('unicode/prevnames');
    expect(res.status).toBe(200);
    expect((res.body as { prevnames: { name: string }[] }).prevnames.map((p) => p.name)).toEqual(
      names,
    );
  });

  it('decodes URL-encoded user ids', async () => {
    await seed([
      { userId: 'a/b c', type: 'username', name: 'slash', changedAt: '2024-01-01T00:00:00.000Z' },
    ]);
    const res = await history(`${encodeURIComponent('a/b c')}/prevnames`);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      userId: 'a/b c',
      prevnames: [{ type: 'username', name: 'slash', changedAt: '2024-01-01T00:00:00.000Z' }],
      code: 200,
    });
  });

  it('accepts a 64-character id and rejects a 65-character one', async () => {
    const ok = await history(`${'x'.repeat(64)}/prevnames`);
    expect(ok.status).toBe(200);
    expect(ok.body).toEqual({ userId: 'x'.repeat(64), prevnames: [], code: 200 });
    const tooLong = await history(`${'x'.repeat(65)}/prevnames`);
    expect(tooLong.status).toBe(400);
    expect(tooLong.body).toEqual({
      message: 'userId must be between 1 and 64 characters long',
      code: 400,
    });
  });

  it('rejects control characters in the id and malformed percent-encoding', async () => {
    const control = await history('a%0Ab/prevnames');
    expect(control.status).toBe(400);
    expect(control.body).toEqual({
      message: 'userId must not contain control characters or unpaired surrogates',
      code: 400,
    });
    const malformed = await history('%E0%A4%A/prevnames');
    expect(malformed.status).toBe(400);
    expect(malformed.body).toEqual({
      message: 'Malformed URL: invalid percent-encoding',
      code: 400,
    });
  });

  it.each([
    ['limit=0', 'limit must be an integer between 1 and 1000'],
    ['limit=1001', 'limit must be an integer between 1 and 1000'],
    ['limit=abc', 'limit must be an integer between 1 and 1000'],
    ['limit=1.5', 'limit must be an integer between 1 and 1000'],
    ['limit=1e2', 'limit must be an integer between 1 and 1000'],
    ['limit=0x10', 'limit must be an integer between 1 and 1000'],
    ['limit=%205', 'limit must be an integer between 1 and 1000'],
    [
      'before=yesterday',
      'before must be an ISO 8601 timestamp with a zone (Z or ±hh:mm), e.g. 2024-06-07T15:30:00.000Z',
    ],
    [
      'after=2024-06-07T15:30:00',
      'after must be an ISO 8601 timestamp with a zone (Z or ±hh:mm), e.g. 2024-06-07T15:30:00.000Z',
    ],
    ['sort=desc', 'property sort should not exist'],
  ])('rejects the query %s with a 400 naming it', async (query, message) => {
    const res = await history(`123/prevnames?${query}`);
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ message, code: 400 });
  });

  it('answers unknown routes and methods with the error body', async () => {
    const unknown = await http(`${fx.url}/api/nope`);
    expect(unknown.status).toBe(404);
    expect(unknown.headers.get('content-type')).toBe('application/json; charset=utf-8');
    expect(unknown.body).toEqual({ message: 'Cannot GET /api/nope', code: 404 });
    const outside = await http(`${fx.url}/nope.js`);
    expect(outside.status).toBe(404);
    expect(outside.headers.get('content-type')).toBe('application/json; charset=utf-8');
    expect(outside.body).toEqual({ message: 'Cannot GET /nope.js', code: 404 });
    const postRoot = await http(`${fx.url}/`, { method: 'POST' });
    expect(postRoot.status).toBe(404);
    expect(postRoot.body).toEqual({ message: 'Cannot POST /', code: 404 });
    const method = await http(`${fx.url}/api/users/123/prevnames`, { method: 'DELETE' });
    expect(method.status).toBe(404);
    expect(method.body).toEqual({ message: 'Cannot DELETE /api/users/123/prevnames', code: 404 });
  });

  it('reports ready with the database up', async () => {
    const ready = await http(`${fx.url}/api/health/ready`);
    expect(ready.status).toBe(200);
    expect(ready.body).toEqual({ status: 'ok', details: { database: { status: 'up' } } });
    const live = await http(`${fx.url}/api/health/live`);
    expect(live.status).toBe(200);
    expect(live.body).toEqual({ status: 'ok' });
  });
});

describe('GET /api/users/:userId/prevnames with the database unreachable', () => {
  // Port 1 on loopback: nothing listens there, so every connection is refused.
  const fx = useApp({
    backend: 'postgres',
    env: { DATABASE_URL: 'postgres://postgres@127.0.0.1:1/test' },
  });

  it('answers 500 with the contract body, and readiness says why', async () => {
    const res = await http(`${fx.url}/api/users/123/prevnames`);
    expect(res.status).toBe(500);
    expect(res.body).toEqual({ message: 'Internal server error', code: 500 });
    const ready = await http(`${fx.url}/api/health/ready`);
    expect(ready.status).toBe(503);
    expect(ready.body).toEqual({ message: 'Not ready: database unavailable', code: 503 });
    const live = await http(`${fx.url}/api/health/live`);
    expect(live.status).toBe(200);
  });
});
