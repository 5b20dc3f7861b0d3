import { jest } from '@jest/globals';
import { Logger } from '@nestjs/common';
import type { TestDatabase } from './database.js';
import { waitFor } from './ports.js';
import type { ServiceProcess } from './service-process.js';

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

/** The detector's known names, sorted. */
export async function knownNames(db: TestDatabase) {
  return db.query<{ userId: string; field: string; guildId: string; name: string | null }>(
    `SELECT user_id AS "userId", field, guild_id AS "guildId", name
       FROM known_names ORDER BY user_id, field, guild_id`,
  );
}

/** The messages an in-process application logs through Nest's Logger (every level). */
export class LogCapture {
  readonly messages: string[] = [];

  constructor() {
    for (const level of ['log', 'warn', 'error'] as const) {
      jest.spyOn(Logger.prototype, level).mockImplementation((message: unknown) => {
        this.messages.push(String(message));
      });
    }
  }

  matching(pattern: RegExp): string[] {
    return this.messages.filter((m) => pattern.test(m));
  }

  restore(): void {
    jest.restoreAllMocks();
  }
}

/** The `msg` of every JSON log line a child process wrote. */
export function logMessages(service: ServiceProcess): string[] {
  const messages: string[] = [];
  for (const line of service.output.split('\n')) {
    if (!line.startsWith('{')) continue;
    try {
      const { msg } = JSON.parse(line) as { msg?: unknown };
      if (typeof msg === 'string') messages.push(msg);
    } catch {
      // a partial line still being written
    }
  }
  return messages;
}

/** "Reconciled server <id>: compared <n> member(s) … in <ms> ms; <k> change(s) recorded" */
export const RECONCILED =
  /^Reconciled server (\d+): compared (\d+) member\(s\) with their last known names in (\d+) ms; (\d+) change\(s\) recorded$/;

export function reconciliations(messages: string[]) {
  return messages.flatMap((message) => {
    const match = RECONCILED.exec(message);
    return match
      ? [{ guildId: match[1], members: +match[2], ms: +match[3], changes: +match[4] }]
      : [];
  });
}
