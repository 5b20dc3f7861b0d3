import { randomBytes } from 'node:crypto';
import type { HistoryEntry } from './api.js';

/** A name change as POST takes it and the stream carries it. */
export interface NameEventBody {
  userId: string;
  type: 'username' | 'displayname';
  name: string;
  changedAt: string;
}

/** Differs between runs and between test files, which share Postgres and Redis. */
const RUN = randomBytes(4).toString('hex');
let counter = 0;

/**
 * A user id nothing else uses, in this run or another: a test that makes its own users sees
 * only its own events and history, whatever ran before it.
 */
export function uniqueUserId(label = 'user'): string {
  counter += 1;
  return `${label}-${RUN}-${counter}`;
}

/** A valid event of a fresh user, with a name of its own, changed at a fixed instant. */
export function nameEvent(overrides: Partial<NameEventBody> = {}): NameEventBody {
  const userId = uniqueUserId();
  return {
    userId,
    type: 'username',
    name: `name-${counter}`,
    changedAt: '2024-06-07T15:30:00.000Z',
    ...overrides,
  };
}

/**
 * The next event of one user on each call: numbered names, alternating types, one second
 * apart (timestamps in the form the service sends them back).
 */
export function eventsOf(userId: string): () => NameEventBody {
  let n = 0;
  return () => {
    n += 1;
    return {
      userId,
      type: n % 2 ? 'username' : 'displayname',
      name: `name-${n}`,
      changedAt: new Date(Date.UTC(2024, 0, 1, 0, 0, n)).toISOString(),
    };
  };
}

/** The JSON a stream carries for an event: exactly the four fields, the time in UTC. */
export function streamed(body: NameEventBody): NameEventBody {
  return {
    userId: body.userId,
    type: body.type,
    name: body.name,
    changedAt: new Date(body.changedAt).toISOString(),
  };
}

/** The entry an event makes in its user's history. */
export function historyEntry(body: NameEventBody): HistoryEntry {
  return { type: body.type, name: body.name, changedAt: new Date(body.changedAt).toISOString() };
}
