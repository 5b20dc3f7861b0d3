/** The detector while Postgres is away: what it sees meanwhile waits, in order. */
import { changesOnceStored, knownNames, recordedChanges } from './support/detector.js';
import {
  ALICE,
  BOB,
  DAVE,
  GUILD_A,
  GUILD_B,
  twoServers,
  useDetectorApp,
} from './support/detector-app.js';
import { detectorFigures } from './support/detector-metrics.js';
import { waitFor } from './support/ports.js';
import { proxiedDatabase, type TcpProxy } from './support/tcp-proxy.js';

describe('the detector while Postgres is down (a TCP proxy in front of it, cut and restored)', () => {
  let proxy: TcpProxy;
  const { fx, discord } = useDetectorApp(
    { guilds: twoServers() },
    {
      env: async (db) => {
        const proxied = await proxiedDatabase(db!.url);
        proxy = proxied.proxy;
        return { DATABASE_URL: proxied.url };
      },
    },
  );
  afterAll(() => proxy?.close());

  it('retries what it saw meanwhile, and records each change once, in order, when it is back', async () => {
    proxy.cut();
    discord.changeMember(GUILD_A, ALICE.id, { nick: 'A1' });
    discord.changeMember(GUILD_A, ALICE.id, { nick: 'A2' });
    discord.changeUser(BOB.id, { username: 'bobby' });
    await waitFor(
      'a failed attempt',
      async () => (await detectorFigures(fx.url)).publishFailures > 0,
    );
    proxy.restore();
    expect(await changesOnceStored(fx.db, 3)).toEqual([
      { userId: ALICE.id, type: 'displayname', name: 'Ali' },
      { userId: ALICE.id, type: 'displayname', name: 'A1' },
      { userId: BOB.id, type: 'username', name: 'bob' },
    ]);
    // A sentinel: once it is stored, nothing before it is still on its way.
    discord.changeMember(GUILD_B, DAVE.id, { nick: 'Dee' });
    await changesOnceStored(fx.db, 4);
    expect(await recordedChanges(fx.db)).toHaveLength(4);
    expect(await knownNames(fx.db)).toEqual(
      expect.arrayContaining([
        { userId: ALICE.id, field: 'nickname', guildId: GUILD_A, name: 'A2' },
        { userId: BOB.id, field: 'username', guildId: '', name: 'bobby' },
      ]),
    );
  }, 30_000);
});
