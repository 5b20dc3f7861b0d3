/** Opting a user out and back in, one request at a time (races: privacy-races). */
import { JSON_TYPE } from './support/api.js';
import { STREAM_BACKENDS } from './support/app.js';
import { historyEntry, nameEvent, uniqueUserId } from './support/events.js';
import { metric } from './support/metrics.js';
import { OPTED_OUT, usePrivacyApp } from './support/privacy.js';

describe.each(STREAM_BACKENDS)('opt-out on $name', ({ backend }) => {
  const { fx, admin, listen, publish, historyOf } = usePrivacyApp(backend);

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
});
