/** Erasing a user's history: from the database, the replays and the metrics (races: privacy-races). */
import { JSON_TYPE } from './support/api.js';
import { STREAM_BACKENDS } from './support/app.js';
import { historyEntry, nameEvent, uniqueUserId } from './support/events.js';
import { metric } from './support/metrics.js';
import { usePrivacyApp } from './support/privacy.js';
import { frame, opening } from './support/sse.js';

describe.each(STREAM_BACKENDS)('erasure on $name', ({ backend }) => {
  const { fx, admin, listen, publish, historyOf } = usePrivacyApp(backend);

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
