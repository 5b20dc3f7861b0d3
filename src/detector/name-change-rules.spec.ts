import { describe, expect, it } from '@jest/globals';
import type { KnownNameValue } from '../name-events/known-names.repository.js';
import type { MemberObservation } from './member-observation.js';
import { compareWithKnown, observedMembers } from './name-change-rules.js';

const USER = '700000000000000001';
const OTHER = '700000000000000002';
const GUILD_A = '800000000000000001';
const GUILD_B = '800000000000000002';
const T0 = new Date('2025-03-04T05:00:00.000Z');
const T1 = new Date('2025-03-04T06:00:00.000Z');
const T2 = new Date('2025-03-04T07:00:00.000Z');

function seen(fields: Partial<MemberObservation>): MemberObservation {
  return {
    guildId: GUILD_A,
    userId: USER,
    username: 'alice',
    globalName: 'Alice',
    nickname: 'Ali',
    at: T1,
    ...fields,
  };
}

/** What the detector knew of USER (in GUILD_A) at T0. */
function known(
  fields: { username?: string; globalName?: string | null; nickname?: string | null } = {},
): KnownNameValue[] {
  const { username = 'alice', globalName = 'Alice', nickname = 'Ali' } = fields;
  return [
    { userId: USER, field: 'username', guildId: '', name: username, seenAt: T0 },
    { userId: USER, field: 'global_name', guildId: '', name: globalName, seenAt: T0 },
    { userId: USER, field: 'nickname', guildId: GUILD_A, name: nickname, seenAt: T0 },
  ];
}

const change = (type: string, name: string, changedAt = T1, source = 0) => ({
  userId: USER,
  type,
  name,
  changedAt,
  source,
});

describe('compareWithKnown: the contract rules, against the last known names', () => {
  it('records nothing at a first sighting, and learns every name', () => {
    const result = compareWithKnown([seen({})], []);
    expect(result.changes).toEqual([]);
    expect(result.updates).toEqual([
      { userId: USER, field: 'username', guildId: '', name: 'alice', seenAt: T1 },
      { userId: USER, field: 'global_name', guildId: '', name: 'Alice', seenAt: T1 },
      { userId: USER, field: 'nickname', guildId: GUILD_A, name: 'Ali', seenAt: T1 },
    ]);
  });

  it('records nothing, and writes nothing, when nothing changed (an avatar, a replay)', () => {
    expect(compareWithKnown([seen({}), seen({ at: T2 })], known())).toEqual({
      changes: [],
      updates: [],
      unrecordable: [],
    });
  });

  it('records the old username, global display name and nickname, stamped with the detection', () => {
    const result = compareWithKnown(
      [seen({ username: 'alice2', globalName: 'Alicia', nickname: 'Al' })],
      known(),
    );
    expect(result.changes).toEqual([
      change('username', 'alice'),
      change('displayname', 'Alice'),
      change('displayname', 'Ali'),
    ]);
    expect(result.updates.map((u) => [u.field, u.name, u.seenAt])).toEqual([
      ['username', 'alice2', T1],
      ['global_name', 'Alicia', T1],
      ['nickname', 'Al', T1],
    ]);
  });

  it('records "X" for X → none, and nothing (but learns) for none → X', () => {
    expect(compareWithKnown([seen({ globalName: null, nickname: null })], known()).changes).toEqual(
      [change('displayname', 'Alice'), change('displayname', 'Ali')],
    );
    const result = compareWithKnown([seen({})], known({ globalName: null, nickname: null }));
    expect(result.changes).toEqual([]);
    expect(result.updates.map((u) => [u.field, u.name])).toEqual([
      ['global_name', 'Alice'],
      ['nickname', 'Ali'],
    ]);
  });

  it('records a move off a legacy name#1234 even when the name stays', () => {
    const result = compareWithKnown(
      [seen({ username: 'alice' })],
      known({ username: 'alice#1234' }),
    );
    expect(result.changes).toEqual([change('username', 'alice#1234')]);
  });

  it('compares in order, each against what the one before left: one change per transition', () => {
    const result = compareWithKnown(
      [
        seen({ username: 'b', at: T1 }),
        // The same user through another server: the username is no longer a change.
        seen({ guildId: GUILD_B, username: 'b', nickname: null, at: T1 }),
        seen({ username: 'c', at: T2 }),
      ],
      known(),
    );
    expect(result.changes).toEqual([
      change('username', 'alice', T1, 0),
      change('username', 'b', T2, 2),
    ]);
    expect(result.updates).toEqual([
      { userId: USER, field: 'username', guildId: '', name: 'c', seenAt: T2 },
      { userId: USER, field: 'nickname', guildId: GUILD_B, name: null, seenAt: T1 },
    ]);
  });

  it('skips an observation older than the known name (an instance that lost the lease)', () => {
    const newer = known({ username: 'zed' }).map((k) => ({ ...k, seenAt: T2 }));
    expect(compareWithKnown([seen({ username: 'old', at: T1 })], newer).changes).toEqual([]);
  });

  it('compares no observation stored already (a replay), and the next against what it left', () => {
    // alice → b → c, both stored (known: c); Discord replays "b" and "c", then "d".
    const [b, c, d] = [
      seen({ username: 'b', at: T2 }),
      seen({ username: 'c', at: T2 }),
      seen({ username: 'd', at: T2 }),
    ];
    const result = compareWithKnown([b, c, d], known({ username: 'c' }), new Set([b, c]));
    expect(result.changes).toEqual([change('username', 'c', T2, 2)]);
    expect(result.updates).toEqual([
      { userId: USER, field: 'username', guildId: '', name: 'd', seenAt: T2 },
    ]);
  });

  it('compares no field the payload did not carry', () => {
    const result = compareWithKnown(
      [seen({ globalName: undefined, nickname: undefined })],
      known({ globalName: 'Other', nickname: 'Other' }),
    );
    expect(result).toEqual({ changes: [], updates: [], unrecordable: [] });
  });

  it('leaves out a previous name the history cannot store, and says so', () => {
    const long = 'x'.repeat(257);
    const result = compareWithKnown([seen({ nickname: 'ok' })], known({ nickname: long }));
    expect(result.changes).toEqual([]);
    expect(result.unrecordable).toEqual([{ userId: USER, type: 'displayname' }]);
    expect(result.updates.map((u) => u.name)).toEqual(['ok']);
  });

  it('lists each member whose known names to read once', () => {
    expect(
      observedMembers([
        seen({}),
        seen({ at: T2 }),
        seen({ guildId: GUILD_B, nickname: undefined }),
        seen({ userId: OTHER }),
      ]),
    ).toEqual([
      { userId: USER, guildId: GUILD_A },
      { userId: USER, guildId: GUILD_B },
      { userId: OTHER, guildId: GUILD_A },
    ]);
  });
});
