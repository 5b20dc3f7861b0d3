import { Clock } from '../src/detector/clock.js';
import { DetectorOutbox } from '../src/detector/detector-outbox.js';
import { DiscordClientFactory } from '../src/detector/discord-client.factory.js';
import { redisEnv, startApp, type TestApp } from './support/app.js';
import { TestDatabase } from './support/database.js';
import {
  apiMember,
  apiUser,
  FakeDiscordClientFactory,
  TEST_DISCORD_TOKEN,
  type FakeGatewayOptions,
} from './support/discord-gateway.js';
import { http } from './support/http.js';
import { SseStream } from './support/sse.js';

const TOKEN = 'an-admin-token-for-the-detector';
const AUTH = { authorization: `Bearer ${TOKEN}` };
const LISTEN = '/api/webhooks/prevnames/listen';
const GUILD = '800000000000000001';
const ALICE = apiUser('700000000000000001', 'alice');
const BOB = apiUser('700000000000000002', 'bob');
const DETECTED_AT = '2025-03-04T05:06:07.089Z';

const world = (): FakeGatewayOptions => ({
  guilds: [{ id: GUILD, members: [apiMember(ALICE), apiMember(BOB)] }],
});

class FixedClock extends Clock {
  override now(): Date {
    return new Date(DETECTED_AT);
  }
}

describe('the detector and opted-out users (Postgres, Redis, a network-free gateway)', () => {
  let db: TestDatabase;
  let app: TestApp;
  let factory: FakeDiscordClientFactory;

  beforeAll(async () => {
    db = await TestDatabase.create();
    factory = new FakeDiscordClientFactory(world);
    app = await startApp(
      { ...redisEnv(db.url), DISCORD_TOKEN: TEST_DISCORD_TOKEN, ADMIN_TOKEN: TOKEN },
      0,
      (builder) =>
        builder
          .overrideProvider(DiscordClientFactory)
          .useValue(factory)
          .overrideProvider(Clock)
          .useValue(new FixedClock()),
    );
    await (
      await factory.gateway(0)
    ).ready;
  });

  afterAll(async () => {
    await app.close();
    await db.drop();
  });

  it('records nothing for an opted-out user, drops the change for good, and records them again once opted in', async () => {
    const optOut = await http(`${app.url}/api/users/${ALICE.id}/opt-out`, {
      method: 'PUT',
      headers: AUTH,
    });
    expect(optOut.body).toEqual({ userId: ALICE.id, optedOut: true, code: 200 });
    const stream = await SseStream.open(`${app.url}${LISTEN}`);
    await stream.until((s) => s.messages.length > 0);
    const gateway = factory.gateways[0];

    gateway.memberUpdate(GUILD, apiMember({ ...ALICE, username: 'alice_2' }));
    // Bob's change, detected after Alice's, is the sentinel: the outbox keeps detection order.
    gateway.memberUpdate(GUILD, apiMember({ ...BOB, username: 'bob_2' }));
    await stream.untilEvents(1);
    expect(stream.events.map((e) => e.data)).toEqual([
      { userId: BOB.id, type: 'username', name: 'bob', changedAt: DETECTED_AT },
    ]);
    expect(app.app.get(DetectorOutbox).size).toBe(0);
    expect(
      await db.query('SELECT 1 FROM name_change_events WHERE user_id = $1', [ALICE.id]),
    ).toEqual([]);

    await http(`${app.url}/api/users/${ALICE.id}/opt-out`, { method: 'DELETE', headers: AUTH });
    gateway.memberUpdate(GUILD, apiMember({ ...ALICE, username: 'alice_3' }));
    await stream.untilEvents(2);
    expect(stream.events[1].data).toEqual({
      userId: ALICE.id,
      type: 'username',
      name: 'alice_2',
      changedAt: DETECTED_AT,
    });
    stream.close();
  });
});
