import { hasCodePointLength } from '../common/string-rules.js';
import type {
  KnownNameField,
  KnownNameKey,
  KnownNameValue,
  NameType,
  NewNameEvent as NameChange,
  ObservedMember,
} from '../name-events/index.js';
import type { MemberObservation } from './member-observation.js';

/** What the history can store (the contract's `name`): 1-256 code points, no NUL, well-formed. */
const MAX_NAME_LENGTH = 256;

/** The fields an observation reports, each read as compared: undefined when not carried. */
const FIELDS: readonly {
  field: KnownNameField;
  type: NameType;
  /** A name of the member in its server (a nickname), not of the user. */
  inServer: boolean;
  read: (observation: MemberObservation) => string | null | undefined;
}[] = [
  { field: 'username', type: 'username', inServer: false, read: (o) => o.username },
  {
    field: 'global_name',
    type: 'displayname',
    inServer: false,
    read: (o) => (o.globalName === undefined ? undefined : o.globalName || null),
  },
  {
    field: 'nickname',
    type: 'displayname',
    inServer: true,
    read: (o) => (o.nickname === undefined ? undefined : o.nickname || null),
  },
];

export interface Comparison {
  /** The changes to record, in observation order; `source` is the observation's index. */
  changes: (NameChange & { source: number })[];
  /** The known names to store: one per key, the last value observed. */
  updates: KnownNameValue[];
  /** Changes whose old name the history cannot store (logged, not recorded). */
  unrecordable: { userId: string; type: NameType }[];
}

/** The members `observations` are of, each once, for their known names to be read. */
export function observedMembers(observations: readonly MemberObservation[]): ObservedMember[] {
  const seen = new Map<string, Set<string>>();
  const members: ObservedMember[] = [];
  for (const { userId, guildId } of observations) {
    let users = seen.get(guildId);
    if (!users) seen.set(guildId, (users = new Set<string>()));
    if (users.has(userId)) continue;
    users.add(userId);
    members.push({ userId, guildId });
  }
  return members;
}

/**
 * Compares each observation, in order, with the last known names, and moves them forward.
 * The contract's rules: only a concrete previous value is recorded (a first sighting, or no
 * display name or nickname before, records nothing); the name recorded is the previous one;
 * `changedAt` is when the observation arrived. A value seen again (the same user through
 * another server, an avatar-only update) is no change, so each change is recorded once; a
 * replayed update stored already is not compared at all (it may be older than the known name). An observation older than the known name is stale (an instance that lost
 * the lease may still be writing) and is skipped.
 * A batch holds thousands of observations: each is read field by field, in place, and only
 * what is stored or recorded is made (most of the detector's garbage was made here).
 */
export function compareWithKnown(
  observations: readonly MemberObservation[],
  known: readonly KnownNameValue[],
  /** Observations stored already (replayed by Discord): not compared again. */
  stored?: ReadonlySet<MemberObservation>,
): Comparison {
  const current = new KnownNameIndex<KnownNameValue>();
  for (const value of known) current.set(value);
  const result: Comparison = { changes: [], updates: [], unrecordable: [] };
  observations.forEach((observation, source) => {
    if (stored?.has(observation)) return;
    const { userId, at } = observation;
    for (const { field, type, read, inServer } of FIELDS) {
      const name = read(observation);
      if (name === undefined) continue;
      const guildId = inServer ? observation.guildId : '';
      const before = current.get(userId, field, guildId);
      if (before && at < before.seenAt) continue;
      if (before && before.name === name) continue;
      const previous = before?.name;
      if (before instanceof MovedName) {
        before.name = name;
        before.seenAt = at;
      } else {
        const after = new MovedName(userId, field, guildId, name, at);
        current.set(after);
        result.updates.push(after);
      }
      if (previous == null) continue;
      if (!isRecordable(previous)) {
        result.unrecordable.push({ userId, type });
        continue;
      }
      result.changes.push({ userId, type, name: previous, changedAt: at, source });
    }
  });
  return result;
}

/** A known name this comparison moved forward (one of `updates`): moved again, changed in place. */
class MovedName implements KnownNameValue {
  constructor(
    readonly userId: string,
    readonly field: KnownNameField,
    readonly guildId: string,
    public name: string | null,
    public seenAt: Date,
  ) {}
}

/**
 * Known names (or their keys) by field, server ('' for a user's own names) and user: found
 * without making a string of the three for each lookup.
 */
class KnownNameIndex<T extends KnownNameKey> {
  private readonly byField = new Map<KnownNameField, Map<string, Map<string, T>>>();

  get(userId: string, field: KnownNameField, guildId: string): T | undefined {
    return this.byField.get(field)?.get(guildId)?.get(userId);
  }

  set(value: T): void {
    let servers = this.byField.get(value.field);
    if (!servers) this.byField.set(value.field, (servers = new Map<string, Map<string, T>>()));
    let users = servers.get(value.guildId);
    if (!users) servers.set(value.guildId, (users = new Map<string, T>()));
    users.set(value.userId, value);
  }
}

function isRecordable(name: string): boolean {
  return (
    name.isWellFormed() && !name.includes('\u0000') && hasCodePointLength(name, 1, MAX_NAME_LENGTH)
  );
}
