import { describe, expect, it } from '@jest/globals';
import { Clock } from '../src/detector/clock.js';
import { knownNames } from './support/detector.js';
import { useDetectorApp } from './support/detector-app.js';
import { apiMember, apiUser } from './support/fake-discord.js';
import { admin, ADMIN_TOKEN } from './support/privacy.js';

const GUILD = '800000000000000001';
const ALICE = apiUser('700000000000000001', 'alice');
const BOB = apiUser('700000000000000002', 'bob');
const DETECTED_AT = '2025-03-04T05:06:07.089Z';

class FixedClock extends Clock {
  override now(): Date {
    return new Date(DETECTED_AT);
  }
}

describe('the detector and opted-out users (Postgres, Redis, the gateway protocol)', () => {
  const { fx, discord } = useDetectorApp(
    {
      guilds: [{ id: GUILD, members: [apiMember(ALICE), apiMember(BOB)] }],
      heartbeatIntervalMs: 300,
    },
    {
      env: { ADMIN_TOKEN },
      customize: (builder) => builder.overrideProvider(Clock).useValue(new FixedClock()),
    },
  );

  it('records and remembers nothing of an opted-out user, and records them again once opted in', async () => {
    const optOut = await admin(fx.url, 'PUT', `${ALICE.id}/opt-out`);
    expect(optOut.body).toEqual({ userId: ALICE.id, optedOut: true, code: 200 });
    // The opt-out forgets what the detector knew of her.
    expect((await knownNames(fx.db)).filter((k) => k.userId === ALICE.id)).toEqual([]);
    const stream = await fx.listen();
    await stream.until((s) => s.messages.length > 0);

    discord.changeUser(ALICE.id, { username: 'alice_2' });
    // Bob's change, seen after Alice's, is the sentinel: observations are compared in order.
    discord.changeUser(BOB.id, { username: 'bob_2' });
    await stream.untilEvents(1);
    expect(stream.events.map((e) => e.data)).toEqual([
      { userId: BOB.id, type: 'username', name: 'bob', changedAt: DETECTED_AT },
    ]);
    expect(
      await fx.db.query('SELECT 1 FROM name_change_events WHERE user_id = $1', [ALICE.id]),
    ).toEqual([]);
    expect((await knownNames(fx.db)).filter((k) => k.userId === ALICE.id)).toEqual([]);

    const optIn = await admin(fx.url, 'DELETE', `${ALICE.id}/opt-out`);
    expect(optIn.body).toEqual({ userId: ALICE.id, optedOut: false, code: 200 });
    // Seen again after the opt-in, she is a first sighting: nothing is recorded yet...
    discord.changeUser(ALICE.id, { username: 'alice_3' });
    discord.changeUser(BOB.id, { username: 'bob_3' });
    await stream.untilEvents(2);
    // ...and her next change is.
    discord.changeUser(ALICE.id, { username: 'alice_4' });
    await stream.untilEvents(3);
    expect(stream.events.slice(1).map((e) => e.data)).toEqual([
      { userId: BOB.id, type: 'username', name: 'bob_2', changedAt: DETECTED_AT },
      { userId: ALICE.id, type: 'username', name: 'alice_3', changedAt: DETECTED_AT },
    ]);
  });
});
