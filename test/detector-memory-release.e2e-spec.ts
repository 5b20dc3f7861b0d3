/**
 * The memory of a reconciliation burst given back to the system once every full view is
 * compared (MemoryRelease), in the built service (`node dist/main.js`): once after a server
 * of 12,000 members, not again after a server of 2,000 that the bot joins later.
 */
import { uniqueRedisPrefix } from './support/app.js';
import { TestDatabase } from './support/database.js';
import { detectorProcessEnv } from './support/detector-app.js';
import { detectorFigures, reconciled } from './support/detector-metrics.js';
import { FakeDiscord, manyMembers } from './support/fake-discord.js';
import { http } from './support/http.js';
import { sample } from './support/metrics.js';
import { ServiceProcess } from './support/service-process.js';

const BIG = '800000000000000031';
const SMALL = '800000000000000032';

async function releases(service: ServiceProcess): Promise<number> {
  const text = (await http<string>(`${service.url}/api/metrics`)).text;
  return sample(text, 'name_history_detector_memory_releases_total');
}

describe('the memory of a reconciliation burst', () => {
  let db: TestDatabase;
  let discord: FakeDiscord;
  let service: ServiceProcess | undefined;

  beforeAll(async () => {
    db = await TestDatabase.create();
    discord = await FakeDiscord.start({
      guilds: [{ id: BIG, members: manyMembers(11_999, 720000000000000000n, 'member') }],
    });
  });

  afterAll(async () => {
    await service?.stop('SIGTERM');
    await discord.close();
    await db.drop();
  });

  it('is given back once every member of a large server is compared, not after a small one', async () => {
    service = await ServiceProcess.start(
      detectorProcessEnv(db, discord, uniqueRedisPrefix(), { LOG_LEVEL: 'info' }),
    );
    expect(await reconciled(service.url, 1)).toMatchObject({
      reconciliations: 1,
      reconciledMembers: 11_999,
    });
    // Given back in the callback that counts the reconciliation: there by the time it shows.
    expect(await releases(service)).toBe(1);
    expect(service.output).toMatch(
      /Every full view compared: gave \d+ MB back to the system in \d+ ms \(resident \d+ MB → \d+ MB\)/,
    );

    const before = await detectorFigures(service.url);
    discord.joinGuild({ id: SMALL, members: manyMembers(2_000, 730000000000000000n, 'small') });
    expect(await reconciled(service.url, 1, { before })).toMatchObject({
      reconciliations: 1,
      reconciledMembers: 2_000,
    });
    // 2,000 members since the last release: not worth another pause.
    expect(await releases(service)).toBe(1);
  }, 60_000);
});
