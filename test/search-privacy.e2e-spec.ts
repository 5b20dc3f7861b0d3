import { nameEvent, uniqueUserId } from './support/events.js';
import { http } from './support/http.js';
import { matchOf, searchQuery, useSearchApp } from './support/search.js';

const ADMIN_TOKEN = 'an-admin-token-for-the-search-privacy-tests';
const ADMIN_AUTH = { authorization: `Bearer ${ADMIN_TOKEN}` };

/** Erased and opted-out users never appear: their rows, and so their index entries, are gone. */
describe('the name search and privacy', () => {
  const { fx, search, seed } = useSearchApp({ env: { ADMIN_TOKEN } });
  const admin = (method: string, path: string) =>
    http(`${fx.url}/api/users/${path}`, { method, headers: ADMIN_AUTH });
  const found = async (name: string, match = 'exact') =>
    (await search(searchQuery({ name, match }))).body.matches.map((m) => m.userId);

  it("drops an erased user's names from every search at once", async () => {
    const [erased, kept] = [uniqueUserId('erased'), uniqueUserId('kept')];
    const events = [
      nameEvent({ userId: erased, name: 'Private' }),
      nameEvent({ userId: kept, name: 'private' }),
      nameEvent({ userId: erased, name: 'Privateer', type: 'displayname' }),
    ];
    await seed(...events);
    expect(await found('PRIVATE')).toEqual([erased, kept]);
    expect(await found('priv', 'prefix')).toEqual([erased, kept, erased]);
    expect((await admin('DELETE', `${erased}/prevnames`)).body).toEqual({
      userId: erased,
      deleted: 2,
      code: 200,
    });
    expect((await search(searchQuery({ name: 'PRIVATE' }))).body.matches).toEqual([
      matchOf(events[1]),
    ]);
    expect(await found('priv', 'prefix')).toEqual([kept]);
  });

  it('drops an opted-out user, and finds nothing new of them while opted out', async () => {
    const [opted, other] = [uniqueUserId('opted'), uniqueUserId('other')];
    await seed(
      nameEvent({ userId: opted, name: 'Hidden' }),
      nameEvent({ userId: other, name: 'hidden' }),
    );
    expect(await found('hidden')).toEqual([opted, other]);
    expect((await admin('PUT', `${opted}/opt-out`)).status).toBe(200);
    expect(await found('hidden')).toEqual([other]);
    expect((await fx.publish(nameEvent({ userId: opted, name: 'HIDDEN' }))).status).toBe(403);
    expect(await found('hidden')).toEqual([other]);
    // Back in, only what is recorded from then on is found.
    expect((await admin('DELETE', `${opted}/opt-out`)).status).toBe(200);
    await seed(nameEvent({ userId: opted, name: 'hiddeN' }));
    expect(await found('HIDDEN')).toEqual([other, opted]);
  });

  it('reads the stored rows themselves: rows loaded in bulk are found at once', async () => {
    await fx.db.query(
      `INSERT INTO name_change_events (user_id, type, name, changed_at)
       VALUES ('restored', 'username', 'Restored', '2020-01-01T00:00:00Z')`,
    );
    expect(await found('restored')).toEqual(['restored']);
  });
});
