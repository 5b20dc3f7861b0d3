import { JSON_TYPE, PUBLISHED } from './support/api.js';
import { STREAM_BACKENDS, useApp } from './support/app.js';
import { historyEntry, nameEvent, uniqueUserId } from './support/events.js';
import { http } from './support/http.js';
import { metric } from './support/metrics.js';
import {
  ADMIN_AUTH,
  ADMIN_TOKEN,
  admin as adminOf,
  OPTED_OUT,
  UNAUTHORIZED,
} from './support/privacy.js';
import { frame, opening } from './support/sse.js';

/** The erasure and opt-out routes, one request at a time (races: privacy-races). */

describe('the privacy routes with ADMIN_TOKEN unset', () => {
  const fx = useApp();

  it.each([
    ['DELETE', '/api/users/someone/prevnames'],
    ['PUT', '/api/users/someone/opt-out'],
    ['DELETE', '/api/users/someone/opt-out'],
    ['GET', '/api/users/someone/opt-out'],
    ['GET', '/api/users/someone/opt-out?x=1'],
  ])('answers %s %s 404 like an unknown route, token or not', async (method, path) => {
    for (const headers of [{}, ADMIN_AUTH]) {
      const res = await http(`${fx.url}${path}`, { method, headers });
      expect(res.status).toBe(404);
      expect(res.headers.get('content-type')).toBe(JSON_TYPE);
      expect(res.body).toEqual({ message: `Cannot ${method} ${path}`, code: 404 });
    }
    // The same shape as a route that does not exist at all.
    const unknownPath = path.replace('/api/users', '/api/userz');
    const unknown = await http(`${fx.url}${unknownPath}`, { method });
    expect(unknown.status).toBe(404);
    expect(unknown.body).toEqual({ message: `Cannot ${method} ${unknownPath}`, code: 404 });
  });

  it('erases nothing, and leaves the history route as it was', async () => {
    const userId = uniqueUserId('kept');
    const body = nameEvent({ userId, name: 'still-here' });
    await fx.listen();
    expect((await fx.publish(body)).status).toBe(200);
    const erasure = await adminOf(fx.url, 'DELETE', `${userId}/prevnames`);
    expect(erasure.status).toBe(404);
    expect(erasure.body).toEqual({
      message: `Cannot DELETE /api/users/${userId}/prevnames`,
      code: 404,
    });
    const history = await fx.history(userId);
    expect(history.status).toBe(200);
    expect(history.body).toEqual({ userId, prevnames: [historyEntry(body)], code: 200 });
  });
});

describe.each(STREAM_BACKENDS)('erasure and opt-out on $name', ({ backend }) => {
  const fx = useApp({ backend, env: { ADMIN_TOKEN } });

  const admin = (method: string, path: string, headers?: Record<string, string>) =>
    adminOf(fx.url, method, path, headers);
  /** A stream that has its opening (the id it starts from). */
  const listen = async (query = '', headers: Record<string, string> = {}) => {
    const stream = await fx.listen(query, headers);
    expect(stream.status).toBe(200);
    await stream.until((s) => s.messages.length > 0);
    return stream;
  };
  /** POSTs, expecting it delivered (to the listener each test opens first). */
  const publish = async (body: ReturnType<typeof nameEvent>) => {
    const res = await fx.publish(body);
    expect(res.body).toEqual(PUBLISHED);
    return res;
  };
  const historyOf = async (userId: string) => (await fx.history(userId)).body.prevnames;

  beforeEach(async () => {
    // Someone listens throughout each test, so that a publish is stored and answered 200.
    await listen(`?userId=${uniqueUserId('listener')}`);
  });

  it.each([
    ['no Authorization header', {}],
    ['a wrong token', { authorization: `Bearer ${ADMIN_TOKEN}x` }],
    ['a prefix of the token', { authorization: `Bearer ${ADMIN_TOKEN.slice(0, -1)}` }],
    ['another scheme', { authorization: `Basic ${ADMIN_TOKEN}` }],
    ['the scheme alone', { authorization: 'Bearer ' }],
  ])('answers 401 to %s, and does nothing', async (_case, headers) => {
    const userId = uniqueUserId('refused');
    await publish(nameEvent({ userId, name: 'kept' }));
    for (const [method, path] of [
      ['DELETE', `${userId}/prevnames`],
      ['PUT', `${userId}/opt-out`],
      ['DELETE', `${userId}/opt-out`],
      ['GET', `${userId}/opt-out`],
    ]) {
      const res = await admin(method, path, headers);
      expect(res.status).toBe(401);
      expect(res.headers.get('content-type')).toBe(JSON_TYPE);
      expect(res.body).toEqual(UNAUTHORIZED);
    }
    expect(await historyOf(userId)).toHaveLength(1);
    expect((await publish(nameEvent({ userId, name: 'still-recorded' }))).status).toBe(200);
  });

  it('checks the token before the user id, and the user id as everywhere else', async () => {
    const tooLong = 'x'.repeat(65);
    const anonymous = await admin('DELETE', `${tooLong}/prevnames`, {});
    expect(anonymous.status).toBe(401);
    expect(anonymous.body).toEqual(UNAUTHORIZED);
    const res = await admin('DELETE', `${tooLong}/prevnames`);
    expect(res.status).toBe(400);
    expect(res.body).toEqual({
      message: 'userId must be between 1 and 64 characters long',
      code: 400,
    });
  });

  it("erases a user's whole history and nobody else's", async () => {
    const userId = uniqueUserId('erased');
    const other = uniqueUserId('other');
    const theirs = nameEvent({ userId: other, name: 'theirs' });
    for (const body of [
      nameEvent({ userId, name: 'one' }),
      theirs,
      nameEvent({ userId, name: 'two', type: 'displayname' }),
      nameEvent({ userId, name: 'three 🦊' }),
    ]) {
      await publish(body);
    }
    const res = await admin('DELETE', `${userId}/prevnames`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe(JSON_TYPE);
    expect(res.body).toEqual({ userId, deleted: 3, code: 200 });
    expect(await historyOf(userId)).toEqual([]);
    expect(await historyOf(other)).toEqual([historyEntry(theirs)]);

    expect((await admin('DELETE', `${userId}/prevnames`)).body).toEqual({
      userId,
      deleted: 0,
      code: 200,
    });
    // Erasure is not an opt-out: recording goes on.
    const later = nameEvent({ userId, name: 'later' });
    await publish(later);
    expect(await historyOf(userId)).toEqual([historyEntry(later)]);
  });

  it("replays nothing of an erased user to a listener resuming from before the erasure, and everyone else's as before", async () => {
    const erased = uniqueUserId('erased');
    const other = uniqueUserId('other');
    const live = await listen();
    const startId = live.messages[0].id!;
    const bodies = [
      nameEvent({ userId: erased, name: 'e1' }),
      nameEvent({ userId: other, name: 'o1' }),
      nameEvent({ userId: erased, name: 'e2' }),
      nameEvent({ userId: other, name: 'o2' }),
      nameEvent({ userId: erased, name: 'e3' }),
    ];
    for (const body of bodies) await publish(body);
    await live.untilEvents(5);
    const ids = live.events.map((e) => e.id!);
    expect(live.events.map((e) => e.data)).toEqual(bodies);

    expect((await admin('DELETE', `${erased}/prevnames`)).body).toEqual({
      userId: erased,
      deleted: 3,
      code: 200,
    });

    const byHeader = await listen('', { 'Last-Event-ID': startId });
    const byQuery = await listen(`?lastEventId=${startId}`);
    const ofErased = await listen(`?userId=${erased}&lastEventId=${startId}`);
    // A sentinel after the replay: anything replayed comes before it.
    const sentinel = await fx.sentinel(
      [byHeader, byQuery, ofErased, live],
      nameEvent({ userId: erased, name: 'after-erasure' }),
    );
    const replay = `${opening(startId)}${frame(ids[1], bodies[1])}${frame(ids[3], bodies[3])}${sentinel.frame}`;
    expect(byHeader.raw).toBe(replay);
    expect(byQuery.raw).toBe(replay);
    expect(ofErased.raw).toBe(`${opening(startId)}${sentinel.frame}`);
  });

  it('opts a user out: erased, refused with 403, nothing stored or broadcast; then back in', async () => {
    const userId = uniqueUserId('opted');
    await publish(nameEvent({ userId, name: 'before' }));
    expect((await admin('GET', `${userId}/opt-out`)).body).toEqual({
      userId,
      optedOut: false,
      code: 200,
    });

    const optOut = await admin('PUT', `${userId}/opt-out`);
    expect(optOut.status).toBe(200);
    expect(optOut.headers.get('content-type')).toBe(JSON_TYPE);
    expect(optOut.body).toEqual({ userId, optedOut: true, code: 200 });
    expect(await historyOf(userId)).toEqual([]);
    expect((await admin('GET', `${userId}/opt-out`)).body).toEqual({
      userId,
      optedOut: true,
      code: 200,
    });

    const live = await listen();
    const refusedSeries = 'name_history_events_refused_total{reason="opted_out"}';
    const refusedBefore = await metric(fx.url, refusedSeries);
    const refused = await fx.publish(nameEvent({ userId, name: 'refused' }));
    expect(refused.status).toBe(403);
    expect(refused.headers.get('content-type')).toBe(JSON_TYPE);
    expect(refused.body).toEqual(OPTED_OUT);
    const sentinel = await fx.sentinel([live]);
    expect(live.events.map((e) => e.data)).toEqual([sentinel.data]);
    expect(await historyOf(userId)).toEqual([]);
    expect(await metric(fx.url, refusedSeries)).toBe(refusedBefore + 1);

    // Idempotent.
    expect((await admin('PUT', `${userId}/opt-out`)).body).toEqual({
      userId,
      optedOut: true,
      code: 200,
    });

    const optIn = await admin('DELETE', `${userId}/opt-out`);
    expect(optIn.status).toBe(200);
    expect(optIn.body).toEqual({ userId, optedOut: false, code: 200 });
    expect((await admin('GET', `${userId}/opt-out`)).body).toEqual({
      userId,
      optedOut: false,
      code: 200,
    });
    expect((await admin('DELETE', `${userId}/opt-out`)).body).toEqual({
      userId,
      optedOut: false,
      code: 200,
    });
    const resumed = nameEvent({ userId, name: 'resumed' });
    await publish(resumed);
    await live.untilEvents(2);
    expect(live.events.map((e) => e.data)).toEqual([sentinel.data, resumed]);
    expect(await historyOf(userId)).toEqual([historyEntry(resumed)]);
  });

  it('refuses only the opted-out users of a batch of concurrent publishes', async () => {
    const opted = uniqueUserId('opted');
    const others = [uniqueUserId('a'), uniqueUserId('b')];
    expect((await admin('PUT', `${opted}/opt-out`)).status).toBe(200);
    const bodies = Array.from({ length: 60 }, (_, i) =>
      nameEvent({ userId: i % 3 === 0 ? opted : others[i % 2], name: `n${i}` }),
    );
    const statuses = await Promise.all(bodies.map(async (body) => (await fx.publish(body)).status));
    expect(statuses).toEqual(bodies.map((b) => (b.userId === opted ? 403 : 200)));
    expect(await historyOf(opted)).toEqual([]);
    const stored = (await historyOf(others[0])).length + (await historyOf(others[1])).length;
    expect(stored).toBe(40);
  });

  it('counts erased entries in the metrics', async () => {
    const series = (reason: string) => `name_history_events_erased_total{reason="${reason}"}`;
    const before = [
      await metric(fx.url, series('erasure')),
      await metric(fx.url, series('opt_out')),
    ];
    const a = uniqueUserId('counted');
    const b = uniqueUserId('counted');
    for (const name of ['x', 'y']) await publish(nameEvent({ userId: a, name }));
    for (const name of ['x', 'y', 'z']) await publish(nameEvent({ userId: b, name }));
    expect((await admin('DELETE', `${a}/prevnames`)).body).toEqual({
      userId: a,
      deleted: 2,
      code: 200,
    });
    expect((await admin('PUT', `${b}/opt-out`)).body).toEqual({
      userId: b,
      optedOut: true,
      code: 200,
    });
    expect(await metric(fx.url, series('erasure'))).toBe(before[0] + 2);
    expect(await metric(fx.url, series('opt_out'))).toBe(before[1] + 3);
  });
});
