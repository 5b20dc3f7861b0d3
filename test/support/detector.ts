import type { APIGuildMember, APIUser } from 'discord.js';
import type { TestDatabase } from './database.js';
import { apiUser, type FakeDiscord } from './fake-discord.js';
import { http } from './http.js';
import { sample } from './metrics.js';
import { waitFor } from './ports.js';

/** A stored event, as the tests compare them: in storage (id) order. */
export interface RecordedEvent {
  id: string;
  userId: string;
  type: string;
  name: string;
  changedAt: string;
}

/** Every stored event, oldest id first. */
export async function recordedEvents(db: TestDatabase): Promise<RecordedEvent[]> {
  return db.query<RecordedEvent & Record<string, unknown>>(
    `SELECT id::text AS id, user_id AS "userId", type, name,
            to_char(changed_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS "changedAt"
       FROM name_change_events
      ORDER BY name_change_events.id`, // not the text column of the same name: "10" < "9"
  );
}

/** The events without their id and time: what a test usually asserts exactly. */
export async function recordedChanges(db: TestDatabase) {
  return (await recordedEvents(db)).map(({ userId, type, name }) => ({ userId, type, name }));
}

/** Waits until `count` events are stored, then returns them all (without ids and times). */
export async function changesOnceStored(db: TestDatabase, count: number) {
  await waitFor(`${count} stored events`, async () => (await recordedEvents(db)).length >= count);
  return recordedChanges(db);
}

/** The stored changes of `users` only (without ids and times), oldest first. */
export async function changesOf(db: TestDatabase, users: readonly APIUser[]) {
  const ids = new Set(users.map((user) => user.id));
  return (await recordedChanges(db)).filter((change) => ids.has(change.userId));
}

/** Waits until `count` changes of `users` are stored, then returns theirs. */
export async function changesOfOnceStored(
  db: TestDatabase,
  users: readonly APIUser[],
  count: number,
) {
  await waitFor(
    `${count} stored changes of ${users.map((u) => u.username).join(', ')}`,
    async () => (await changesOf(db, users)).length >= count,
  );
  return changesOf(db, users);
}

let usersMade = 0n;

/**
 * A Discord user no other test of the file uses (ids from 720000000000000001 on): a test
 * that adds its own members sees only its own changes, whatever the others did.
 */
export function newUser(username: string, fields: Partial<APIUser> = {}): APIUser {
  usersMade += 1n;
  return apiUser(String(720_000_000_000_000_000n + usersMade), username, fields);
}

/**
 * `member` joins the server (GUILD_MEMBER_ADD): resolves once the detector knows its
 * nickname there, its first sighting in that server (which records nothing).
 */
export async function joined(
  discord: FakeDiscord,
  db: TestDatabase,
  guildId: string,
  member: APIGuildMember,
): Promise<void> {
  discord.addMember(guildId, member);
  await waitFor(`${member.user.username} known in server ${guildId}`, async () =>
    (await knownNames(db)).some(
      (k) => k.userId === member.user.id && k.field === 'nickname' && k.guildId === guildId,
    ),
  );
}

/** The detector's known names, sorted. */
export async function knownNames(db: TestDatabase) {
  return db.query<{ userId: string; field: string; guildId: string; name: string | null }>(
    `SELECT user_id AS "userId", field, guild_id AS "guildId", name
       FROM known_names ORDER BY user_id, field, guild_id`,
  );
}

/** The detector's figures in an instance's `/api/metrics`: what it compared and found. */
export interface DetectorFigures {
  /** Full views of a server compared to the last member. */
  reconciliations: number;
  /** Members compared in full views. */
  reconciledMembers: number;
  /** Changes found by reconciliation. */
  reconciledChanges: number;
  /** Changes found in live updates. */
  liveChanges: number;
  /** The time the reconciliations took, in all (ms). */
  reconcileMs: number;
  /** Batches of observations that failed, to be retried. */
  publishFailures: number;
  /** Observations waiting or under way. */
  backlog: { live: number; reconcile: number };
}

export async function detectorFigures(baseUrl: string): Promise<DetectorFigures> {
  const text = (await http<string>(`${baseUrl}/api/metrics`)).text;
  const of = (series: string) => sample(text, `name_history_detector_${series}`);
  return {
    reconciliations: of('reconciliations_total'),
    reconciledMembers: of('members_compared_total{source="reconciliation"}'),
    reconciledChanges: of('changes_total{source="reconciliation"}'),
    liveChanges: of('changes_total{source="live"}'),
    reconcileMs: of('reconciliation_duration_seconds_sum') * 1000,
    publishFailures: of('publish_failures_total'),
    backlog: { live: of('backlog{queue="live"}'), reconcile: of('backlog{queue="reconcile"}') },
  };
}

/**
 * Waits until the instance at `baseUrl` has finished `count` reconciliations since it
 * started (or since `before`); returns the figures since `before` then.
 */
export async function reconciled(
  baseUrl: string,
  count: number,
  { before, timeoutMs = 30_000 }: { before?: DetectorFigures; timeoutMs?: number } = {},
): Promise<DetectorFigures> {
  return waitFor(
    `${count} reconciliation(s) in ${baseUrl}/api/metrics`,
    async () => {
      const figures = since(before, await detectorFigures(baseUrl));
      return figures.reconciliations >= count && figures;
    },
    { timeoutMs, intervalMs: 50 },
  );
}

/** The counts of `after` less those of `before` (the backlog as it is in `after`). */
export function since(before: DetectorFigures | undefined, after: DetectorFigures) {
  if (!before) return after;
  return {
    reconciliations: after.reconciliations - before.reconciliations,
    reconciledMembers: after.reconciledMembers - before.reconciledMembers,
    reconciledChanges: after.reconciledChanges - before.reconciledChanges,
    liveChanges: after.liveChanges - before.liveChanges,
    reconcileMs: after.reconcileMs - before.reconcileMs,
    publishFailures: after.publishFailures - before.publishFailures,
    backlog: after.backlog,
  };
}
