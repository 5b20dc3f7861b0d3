/** The two kinds of name the service records. */
export const NAME_TYPES = ['username', 'displayname'] as const;
export type NameType = (typeof NAME_TYPES)[number];

/** An event to store: its fields as given, `changedAt` already parsed. */
export interface NewNameEvent {
  userId: string;
  type: NameType;
  name: string;
  changedAt: Date;
}

/** A stored event, as the stream and the history send it (`changedAt` already in UTC ISO). */
export interface StoredNameEvent {
  /** Monotonic, as a decimal string: the SSE event id. */
  id: string;
  userId: string;
  type: NameType;
  name: string;
  changedAt: string;
}

/** One entry of a user's history: a stored event without its user and id. */
export type NameEntry = Pick<StoredNameEvent, 'type' | 'name' | 'changedAt'>;

/** What publishing one event came to. */
export interface PublishOutcome {
  event: StoredNameEvent;
  /** False when the same four fields were stored already (a repeat). */
  created: boolean;
  /** How many instances with listeners received the event: 0 means nobody is listening. */
  receivers: number;
}

/** A stored event, and whether this call stored it (false: the same four fields already were). */
export type StoredOutcome = Omit<PublishOutcome, 'receivers'>;

/**
 * The detector compares users in this many partitions, each under a lock of its own
 * (`publishDetected`), so that comparisons of different users run side by side while two
 * of the same user never do. A protocol constant: every instance must agree on it.
 */
export const USER_PARTITIONS = 8;

/** The partition of `userId`: FNV-1a of its characters, which spreads snowflakes evenly. */
export function userPartitionOf(userId: string): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < userId.length; i++) {
    hash = Math.imul(hash ^ userId.charCodeAt(i), 0x01000193);
  }
  return (hash >>> 0) % USER_PARTITIONS;
}

/** A user's history was erased: every event and known name of theirs deleted. */
export interface UserErasedEvent {
  userId: string;
  /** How many events. */
  deleted: number;
}

/** Events were deleted, on this instance or another: what a module read of the log may be gone. */
export interface EventsRemovedEvent {
  /** Whose (null: anyone's: retention, or removals this instance may have missed unheard). */
  userId: string | null;
}

/**
 * The name-event domain's events, by name. `user.erased` and `user.opted-out` come once, on
 * the instance that made the change, after its commit and before its answer: for reactions
 * that must happen once. `events.removed` comes on every instance (NameEventRemovalsService carries
 * it to the others, within milliseconds of the commit): for whatever holds events it read and
 * must not use one that is gone.
 */
export interface NameDomainEvents {
  'user.erased': UserErasedEvent;
  'user.opted-out': UserErasedEvent;
  'events.removed': EventsRemovedEvent;
}

export { StorageUnavailableError } from '../database/index.js';

/** A publish for a user a RecordingGuard refuses (who opted out): nothing was stored or broadcast. */
export class RecordingRefusedError extends Error {
  override readonly name = 'RecordingRefusedError';

  constructor(readonly userId: string) {
    super(`Names of user ${userId} are not recorded`);
  }
}
