import type { DocumentedErrorCases } from '../support/documented-errors.js';
import { http } from '../support/http.js';

export default {
  async provoke({ app, noDatabase, db, start }) {
    const answers: [string, Awaited<ReturnType<typeof http>>][] = [
      // An empty user id is an id of the wrong length, as the document says.
      ['getNameHistory 400', await http(`${app.url}/api/users//prevnames`)],
      ['getNameHistory 500', await http(`${noDatabase.url}/api/users/1/prevnames`)],
    ];
    // A long history read by many at once: one at a time reads it, the others are told to
    // come back (tried again until some are: how the reads interleave is the machine's).
    const limited = await start({ HISTORY_LONG_READS: '1', HISTORY_LONG_READS_QUEUE: '0' });
    await db.query(
      `INSERT INTO name_change_events (user_id, type, name, changed_at)
       SELECT 'long-history', 'username', 'n' || g, timestamptz '2024-01-01Z' + g * interval '1 s'
         FROM generate_series(1, 1500) g`,
    );
    for (let round = 0; round < 20; round++) {
      const reads = await Promise.all(
        Array.from({ length: 20 }, () => http(`${limited.url}/api/users/long-history/prevnames`)),
      );
      const busy = reads.find((read) => read.status === 503);
      if (busy) return [...answers, ['getNameHistory 503', busy]];
    }
    return answers;
  },
} satisfies DocumentedErrorCases;
