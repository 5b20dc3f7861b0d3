/**
 * An upgrade from the schema that kept one row per known name (known_names) to one per user
 * and one per member (SplitKnownNames1769300000000): what the previous version knew carries
 * over, so that the first reconciliation after the upgrade records what changed meanwhile,
 * once, and nothing else. Through the built service, as deployments run it.
 */
import { SplitKnownNames1769300000000 } from '../src/name-events/migrations/1769300000000-split-known-names.js';
import { uniqueRedisPrefix } from './support/app.js';
import { TestDatabase } from './support/database.js';
import { byUser, knownNames, recordedChanges } from './support/detector.js';
import { detectorProcessEnv, GUILD_A, GUILD_B } from './support/detector-app.js';
import { reconciled } from './support/detector-metrics.js';
import { apiMember, apiUser, FakeDiscord } from './support/fake-discord.js';
import { migrateAllBut } from './support/schema.js';
import { ensureBuilt, ServiceProcess } from './support/service-process.js';

const ANN = apiUser('700000000000000011', 'ann_2', { global_name: 'Ann' });
const BEN = apiUser('700000000000000012', 'ben', { global_name: 'Benjamin' });
const CY = apiUser('700000000000000013', 'cy');
const DEE = apiUser('700000000000000014', 'dee');
const SEEN_AT = '2025-01-02 03:04:05+00';

describe('the known names of the previous schema, after an upgrade', () => {
  let db: TestDatabase;
  let discord: FakeDiscord;
  let service: ServiceProcess | undefined;

  beforeAll(async () => {
    ensureBuilt();
    db = await TestDatabase.create();
    await migrateAllBut(db, [SplitKnownNames1769300000000]);
    // As the previous version left them: Ann known in both servers (a nickname in A), Ben
    // without a global name, Cy with none said (an update that did not carry it); and a
    // nickname of Dee's without her user names, which that version never wrote: not carried
    // over (a member's row goes with its user's), so she is a first sighting.
    await db.query(
      `INSERT INTO known_names (user_id, field, guild_id, name, seen_at)
       SELECT user_id, field, guild_id, name, $1::timestamptz
         FROM (VALUES ($2, 'username', '', 'ann'), ($2, 'global_name', '', 'Ann'),
                      ($2, 'nickname', $5, 'Annie'), ($2, 'nickname', $6, NULL),
                      ($3, 'username', '', 'ben'), ($3, 'global_name', '', NULL),
                      ($3, 'nickname', $5, NULL),
                      ($4, 'username', '', 'cy'), ($4, 'nickname', $5, 'C'),
                      ($7, 'nickname', $5, 'Dee-Dee'))
              AS k(user_id, field, guild_id, name)`,
      [SEEN_AT, ANN.id, BEN.id, CY.id, GUILD_A, GUILD_B, DEE.id],
    );
    // Meanwhile: Ann's username, Ann's nickname in B and Ben's global name changed; Cy's
    // nickname went.
    discord = await FakeDiscord.start({
      guilds: [
        {
          id: GUILD_A,
          members: [
            apiMember(ANN, { nick: 'Annie' }),
            apiMember(BEN),
            apiMember(CY),
            apiMember(DEE, { nick: 'D' }),
          ],
        },
        { id: GUILD_B, members: [apiMember(ANN, { nick: 'Ann in B' })] },
      ],
    });
  });

  afterAll(async () => {
    await service?.stop('SIGKILL');
    await discord.close();
    await db.drop();
  });

  it('are carried over: what changed meanwhile is recorded once, and the old table is gone', async () => {
    service = await ServiceProcess.start(detectorProcessEnv(db, discord, uniqueRedisPrefix()));
    expect(await reconciled(service.url, 2)).toMatchObject({ reconciledChanges: 2 });

    // Ben had no global name and Ann none in B: nothing before, nothing recorded (the rule).
    expect(byUser(await recordedChanges(db))).toEqual([
      { userId: ANN.id, type: 'username', name: 'ann' },
      { userId: CY.id, type: 'displayname', name: 'C' },
    ]);
    expect(await knownNames(db)).toEqual([
      { userId: ANN.id, field: 'global_name', guildId: '', name: 'Ann' },
      { userId: ANN.id, field: 'nickname', guildId: GUILD_A, name: 'Annie' },
      { userId: ANN.id, field: 'nickname', guildId: GUILD_B, name: 'Ann in B' },
      { userId: ANN.id, field: 'username', guildId: '', name: 'ann_2' },
      { userId: BEN.id, field: 'global_name', guildId: '', name: 'Benjamin' },
      { userId: BEN.id, field: 'nickname', guildId: GUILD_A, name: null },
      { userId: BEN.id, field: 'username', guildId: '', name: 'ben' },
      { userId: CY.id, field: 'global_name', guildId: '', name: null },
      { userId: CY.id, field: 'nickname', guildId: GUILD_A, name: null },
      { userId: CY.id, field: 'username', guildId: '', name: 'cy' },
      { userId: DEE.id, field: 'global_name', guildId: '', name: null },
      { userId: DEE.id, field: 'nickname', guildId: GUILD_A, name: 'D' },
      { userId: DEE.id, field: 'username', guildId: '', name: 'dee' },
    ]);
    expect(await db.query(`SELECT to_regclass('known_names') AS "table"`)).toEqual([
      { table: null },
    ]);
  });
});
