import { nameEvent, uniqueUserId } from './support/events.js';
import { matchOf, searchQuery, useSearchApp } from './support/search.js';

const AT = '2024-06-07T15:30:00.000Z';

/** What a search finds: names equal ignoring case and normalisation, or starting so. */
describe('the name search: what matches', () => {
  const { search, seed } = useSearchApp();

  const names = async (query: Record<string, string>) => {
    const res = await search(searchQuery(query));
    expect(res.status).toBe(200);
    expect(res.body.name).toBe(query.name);
    expect(res.body.code).toBe(200);
    return res.body.matches.map((m) => m.name);
  };

  it('finds a name ignoring ASCII case, and nothing that is merely close', async () => {
    const events = ['Sentinel', 'SENTINEL', 'sentinel', 'sentinel2', 'sentine', ' sentinel'].map(
      (name) => nameEvent({ name }),
    );
    await seed(...events);
    const res = await search(searchQuery({ name: 'sEnTiNeL' }));
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      name: 'sEnTiNeL',
      matches: events.slice(0, 3).map(matchOf),
      code: 200,
    });
    expect(await names({ name: 'no such name' })).toEqual([]);
  });

  it('lowers beyond ASCII: Latin, Greek, Cyrillic, and İ as Postgres lowers it', async () => {
    await seed(
      nameEvent({ name: 'ñelly' }),
      nameEvent({ name: 'ΑΘΗΝΑ' }),
      nameEvent({ name: 'привет' }),
      nameEvent({ name: 'İstanbul' }),
      nameEvent({ name: 'STRAẞE' }),
    );
    expect(await names({ name: 'Ñelly' })).toEqual(['ñelly']);
    expect(await names({ name: 'ÑELLY' })).toEqual(['ñelly']);
    expect(await names({ name: 'αθηνα' })).toEqual(['ΑΘΗΝΑ']);
    expect(await names({ name: 'ПРИВЕТ' })).toEqual(['привет']);
    // Postgres lowers 'İ' to 'i'; JavaScript's toLowerCase to 'i' and a combining dot.
    expect(await names({ name: 'istanbul' })).toEqual(['İstanbul']);
    expect(await names({ name: 'İSTANBUL' })).toEqual(['İstanbul']);
    expect(await names({ name: 'straße' })).toEqual(['STRAẞE']);
  });

  it('compares NFC and NFD forms of a name as one (docs/search.md: normalisation)', async () => {
    const composed = 'Jos\u00e9';
    const decomposed = 'Jose\u0301';
    await seed(nameEvent({ name: composed }), nameEvent({ name: decomposed }));
    expect(await names({ name: 'JOS\u00c9' })).toEqual([composed, decomposed]);
    expect(await names({ name: 'JOSE\u0301' })).toEqual([composed, decomposed]);
    // Stored and answered byte-for-byte all the same.
    expect(await names({ name: 'jose' })).toEqual([]);
  });

  it('decodes the query as a URL query string: + is a space, %2B a plus', async () => {
    await seed(nameEvent({ name: 'two words' }), nameEvent({ name: 'two+words' }));
    expect((await search('?name=Two+Words')).body.matches.map((m) => m.name)).toEqual([
      'two words',
    ]);
    expect((await search('?name=two%2Bwords')).body.matches.map((m) => m.name)).toEqual([
      'two+words',
    ]);
    expect((await search('?name=two%20words')).body.name).toBe('two words');
  });

  it('keeps to one type with type=', async () => {
    const user = nameEvent({ name: 'Typed', type: 'username' });
    const display = nameEvent({ name: 'typed', type: 'displayname' });
    await seed(user, display);
    expect((await search(searchQuery({ name: 'TYPED' }))).body.matches).toEqual(
      [user, display].map(matchOf),
    );
    expect((await search(searchQuery({ name: 'TYPED', type: 'username' }))).body.matches).toEqual([
      matchOf(user),
    ]);
    expect(
      (await search(searchQuery({ name: 'TYPED', type: 'displayname' }))).body.matches,
    ).toEqual([matchOf(display)]);
  });

  it('finds names that start with the name with match=prefix, wildcards taken literally', async () => {
    await seed(
      ...['Prefixed', 'PREFIX', 'prefix-2', 'preFIXture', 'pre', 'unprefixed'].map((name) =>
        nameEvent({ name }),
      ),
      ...['50%off', '50xoff', 'a_b', 'axb', 'back\\slash', 'backXslash'].map((name) =>
        nameEvent({ name }),
      ),
    );
    expect(await names({ name: 'PREFIX', match: 'prefix' })).toEqual([
      'Prefixed',
      'PREFIX',
      'prefix-2',
      'preFIXture',
    ]);
    expect(await names({ name: 'prefix', match: 'exact' })).toEqual(['PREFIX']);
    expect(await names({ name: '50%', match: 'prefix' })).toEqual(['50%off']);
    expect(await names({ name: 'A_', match: 'prefix' })).toEqual(['a_b']);
    expect(await names({ name: 'back\\', match: 'prefix' })).toEqual(['back\\slash']);
    expect(await names({ name: 'PR', match: 'prefix', type: 'displayname' })).toEqual([]);
  });

  it('answers searches asked at once each with its own matches (they may share a statement)', async () => {
    const events = Array.from({ length: 30 }, (_, i) =>
      nameEvent({ name: `Together-${i % 10}`, type: i % 2 ? 'username' : 'displayname' }),
    );
    await seed(...events);
    const queries = Array.from({ length: 30 }, (_, i) => ({
      name: `TOGETHER-${i % 10}`,
      ...(i >= 10 ? { type: i % 2 ? 'username' : 'displayname' } : {}),
      ...(i >= 20 ? { limit: '1' } : {}),
    }));
    const answers = await Promise.all(queries.map((query) => search(searchQuery(query))));
    for (const [i, answer] of answers.entries()) {
      const expected = events
        .filter((event) => event.name.toLowerCase() === queries[i].name.toLowerCase())
        .filter((event) => !queries[i].type || event.type === queries[i].type)
        .slice(0, queries[i].limit ? 1 : undefined);
      expect(answer.status).toBe(200);
      expect(answer.body.matches).toEqual(expected.map(matchOf));
    }
  });

  it('orders by changedAt, ties in storage order, whoever the users are', async () => {
    const late = nameEvent({ name: 'Tied', changedAt: '2024-06-08T00:00:00.000Z' });
    const tied = [1, 2, 3].map(() => nameEvent({ name: 'tied', changedAt: AT }));
    const early = nameEvent({ name: 'TIED', changedAt: '2024-06-07T15:29:59.999+00:00' });
    const sameUser = uniqueUserId();
    const again = nameEvent({ userId: sameUser, name: 'tieD', changedAt: AT, type: 'displayname' });
    await seed(late, tied[2], tied[0], early, again, tied[1]);
    expect((await search(searchQuery({ name: 'tied' }))).body.matches).toEqual(
      [early, tied[2], tied[0], again, tied[1], late].map(matchOf),
    );
  });
});
