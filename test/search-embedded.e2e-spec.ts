import { DataSource } from 'typeorm';
import { nameEvent } from './support/events.js';
import { matchOf, searchQuery, useSearchApp } from './support/search.js';

/** The embedded default (PGlite, no DATABASE_URL): the same index, the same answers. */
describe('the name search on the embedded database', () => {
  const { fx, search, seed, walk } = useSearchApp({ backend: 'embedded' });

  it('built the index (CONCURRENTLY, outside a transaction) and it is valid', async () => {
    const rows = await fx.app
      .get(DataSource)
      .query<{ valid: boolean }[]>(
        `SELECT indisvalid AS valid FROM pg_index WHERE indexrelid = 'name_change_events_search_idx'::regclass`,
      );
    expect(rows).toEqual([{ valid: true }]);
  });

  it('folds case beyond ASCII, normalises, pages and takes prefixes as on Postgres', async () => {
    const events = [
      nameEvent({ name: 'ñelly' }),
      nameEvent({ name: 'ÑELLY', type: 'displayname' }),
      nameEvent({ name: 'n\u0303elly' }),
      nameEvent({ name: 'İstanbul' }),
      nameEvent({ name: 'ПРИВЕТ' }),
      nameEvent({ name: 'ñelly_2' }),
    ];
    await seed(...events);
    const pages = await walk(searchQuery({ name: 'Ñelly', limit: 2 }));
    expect(pages).toEqual([events.slice(0, 2).map(matchOf), [matchOf(events[2])]]);
    expect((await search(searchQuery({ name: 'istanbul' }))).body.matches).toEqual([
      matchOf(events[3]),
    ]);
    expect((await search(searchQuery({ name: 'привет' }))).body.matches).toEqual([
      matchOf(events[4]),
    ]);
    const prefix = await search(searchQuery({ name: 'ÑELLY_', match: 'prefix' }));
    expect(prefix.body.matches).toEqual([matchOf(events[5])]);
  });
});
