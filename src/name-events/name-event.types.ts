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

/**
 * A database session, for statements that must run in the caller's transaction (the
 * detector's known names, written with the events they produce).
 */
export interface SqlSession {
  query<T>(sql: string, parameters: unknown[]): Promise<T[]>;
}

/** The database could not be reached, or failed a statement it should not have. */
export class StorageUnavailableError extends Error {
  override readonly name = 'StorageUnavailableError';
}

/** A publish for a user who has opted out: nothing was stored or broadcast. */
export class UserOptedOutError extends Error {
  override readonly name = 'UserOptedOutError';

  constructor(readonly userId: string) {
    super('The user has opted out of name recording');
  }
}
