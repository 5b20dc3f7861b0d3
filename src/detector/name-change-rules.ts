import type { NameType } from '../name-events/name-event.types.js';
import type { KnownNameField } from '../name-events/known-name.entity.js';
import type { KnownNameKey, KnownNameValue } from '../name-events/known-names.repository.js';
import type { NewNameEvent as NameChange } from '../name-events/name-event.types.js';
import type { MemberObservation } from './member-observation.js';

/** What the history can store (the contract's `name`): 1-256 code points, no NUL, well-formed. */
const MAX_NAME_LENGTH = 256;

const TYPE_OF: Record<KnownNameField, NameType> = {
  username: 'username',
  global_name: 'displayname',
  nickname: 'displayname',
};

export interface Comparison {
  /** The changes to record, in observation order; `source` is the observation's index. */
  changes: (NameChange & { source: number })[];
  /** The known names to store: one per key, the last value observed. */
  updates: KnownNameValue[];
  /** Changes whose old name the history cannot store (logged, not recorded). */
  unrecordable: { userId: string; type: NameType }[];
}

/** The known names `observations` are compared with, each once. */
export function knownNameKeys(observations: readonly MemberObservation[]): KnownNameKey[] {
  const keys = new Map<string, KnownNameKey>();
  for (const observation of observations) {
    for (const { key } of fieldsOf(observation)) keys.set(keyString(key), key);
  }
  return [...keys.values()];
}

/**
 * Compares each observation, in order, with the last known names, and moves them forward.
 * The contract's rules: only a concrete previous value is recorded (a first sighting, or no
 * display name or nickname before, records nothing); the name recorded is the previous one;
 * `changedAt` is when the observation arrived. A value seen again (the same user through
 * another server, a replayed packet, an avatar-only update) is no change, so each change is
 * recorded once. An observation older than the known name is stale (an instance that lost
 * the lease may still be writing) and is skipped.
 */
export function compareWithKnown(
  observations: readonly MemberObservation[],
  known: readonly KnownNameValue[],
): Comparison {
  const current = new Map(known.map((value) => [keyString(value), value]));
  const updated = new Map<string, KnownNameValue>();
  const result: Comparison = { changes: [], updates: [], unrecordable: [] };
  observations.forEach((observation, source) => {
    for (const { key, name } of fieldsOf(observation)) {
      const id = keyString(key);
      const before = current.get(id);
      if (before && observation.at < before.seenAt) continue;
      if (before && before.name === name) continue;
      const after = { ...key, name, seenAt: observation.at };
      current.set(id, after);
      updated.set(id, after);
      if (before?.name == null) continue;
      const type = TYPE_OF[key.field];
      if (!isRecordable(before.name)) {
        result.unrecordable.push({ userId: key.userId, type });
        continue;
      }
      result.changes.push({
        userId: key.userId,
        type,
        name: before.name,
        changedAt: observation.at,
        source,
      });
    }
  });
  result.updates = [...updated.values()];
  return result;
}

/** The fields an observation reports: a field the payload did not carry is not compared. */
function fieldsOf(observation: MemberObservation): { key: KnownNameKey; name: string | null }[] {
  const { userId, guildId } = observation;
  const fields: { key: KnownNameKey; name: string | null }[] = [
    { key: { userId, field: 'username', guildId: '' }, name: observation.username },
  ];
  if (observation.globalName !== undefined) {
    fields.push({
      key: { userId, field: 'global_name', guildId: '' },
      name: observation.globalName || null,
    });
  }
  if (observation.nickname !== undefined) {
    fields.push({
      key: { userId, field: 'nickname', guildId },
      name: observation.nickname || null,
    });
  }
  return fields;
}

function keyString({ userId, field, guildId }: KnownNameKey): string {
  return `${userId}\u0000${field}\u0000${guildId}`;
}

function isRecordable(name: string): boolean {
  if (name.length === 0 || !name.isWellFormed() || name.includes('\u0000')) return false;
  let count = 0;
  for (const _ of name) {
    if (++count > MAX_NAME_LENGTH) return false;
  }
  return true;
}
