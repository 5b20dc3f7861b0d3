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

export { StorageUnavailableError } from '../database/sql.service.js';

/** A publish for a user a RecordingGuard refuses (who opted out): nothing was stored or broadcast. */
export class RecordingRefusedError extends Error {
  override readonly name = 'RecordingRefusedError';

  constructor(readonly userId: string) {
    super(`Names of user ${userId} are not recorded`);
  }
}
