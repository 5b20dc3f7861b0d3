/**
 * An instance killed (SIGKILL) under traffic, beside another: nothing is lost, and its
 * listeners resume on the survivor. SIGTERM: instances-term.
 */
import { PUBLISH } from './support/api.js';
import { eventsOf, uniqueUserId, type NameEventBody } from './support/events.js';
import { post } from './support/http.js';
import { PROCESS_TIMEOUT_MS, useInstanceProcesses } from './support/instances.js';
import { waitFor } from './support/ports.js';
import { sendSentinel } from './support/sentinel.js';
import type { ServiceProcess } from './support/service-process.js';
import type { SseStream } from './support/sse.js';

/** POSTs, turning a connection failure (the instance died) into status 0. */
async function tryPost(url: string, body: NameEventBody): Promise<number> {
  try {
    return (await post(`${url}${PUBLISH}`, body)).status;
  } catch {
    return 0;
  }
}

/**
 * What a client that drops the ids it already has sees on `streams` (one listener, before
 * and after a reconnect): every stored id, and newly stored events in increasing id order.
 * Only `retried` names (a client's retry of a POST that failed) may come again or late.
 */
function expectComplete(
  streams: SseStream[],
  stored: { id: string; name: string }[],
  retried: Set<string>,
) {
  const events = streams.flatMap((s) => s.events);
  const ids = new Set(events.map((e) => e.id!));
  expect([...ids].sort()).toEqual(stored.map((row) => row.id).sort());
  const fresh = streams.flatMap((s, n) =>
    s.events
      .filter((e) => !retried.has((e.data as NameEventBody).name))
      .map((e) => ({ id: BigInt(e.id!), from: `${e.id}@stream${n}` })),
  );
  const disorder = fresh.findIndex((e, i) => i > 0 && e.id <= fresh[i - 1].id);
  // On failure, say where: which stream each id came from, around the first id out of order.
  expect(
    disorder === -1
      ? 'in order'
      : fresh.slice(Math.max(0, disorder - 3), disorder + 3).map((e) => e.from),
  ).toBe('in order');
  for (const e of events) {
    const row = stored.find((r) => r.id === e.id)!;
    expect((e.data as NameEventBody).name).toBe(row.name);
  }
}

describe('instances as processes (node dist/main.js): SIGKILL', () => {
  const processes = useInstanceProcesses();

  let survivor: ServiceProcess;

  it(
    'loses nothing: the survivor streams with no gap, the victim’s listeners resume on it',
    async () => {
      const victim = await processes.start();
      survivor = await processes.start();
      const userId = uniqueUserId('kill');
      const next = eventsOf(userId);

      const onSurvivor = [
        await processes.listen(survivor),
        await processes.listen(survivor, `?userId=${userId}`),
      ];
      const onVictim = [
        await processes.listen(victim),
        await processes.listen(victim, `?userId=${userId}`),
      ];

      // Traffic to both: a steady publisher on the survivor, four on the victim.
      let stop = false;
      const failedOnVictim: NameEventBody[] = [];
      const survivorStatuses: number[] = [];
      const toSurvivor = (async () => {
        for (let i = 0; i < 400 && !stop; i++)
          survivorStatuses.push(await tryPost(survivor.url, next()));
      })();
      const toVictim = Array.from({ length: 4 }, async () => {
        for (let i = 0; i < 400 && !stop; i++) {
          const body = next();
          if ((await tryPost(victim.url, body)) !== 200) {
            failedOnVictim.push(body);
            if (victim.exit) return;
          }
        }
      });

      await onSurvivor[0].untilEvents(30, 20_000);
      victim.signal('SIGKILL');
      expect(await victim.exited).toEqual({ code: null, signal: 'SIGKILL' });
      await Promise.all(toVictim);
      for (const stream of onVictim) await stream.until((s) => s.ended, 10_000);

      // The victim's listeners reconnect to the survivor with the last id they had.
      const resumed = [
        await processes.listen(survivor, '', {
          'Last-Event-ID': onVictim[0].events.at(-1)?.id ?? '0',
        }),
        await processes.listen(survivor, `?userId=${userId}`, {
          'Last-Event-ID': onVictim[1].events.at(-1)?.id ?? '0',
        }),
      ];
      const atReconnect = survivorStatuses.length;
      await waitFor(
        '30 more POSTs on the survivor',
        () => survivorStatuses.length >= atReconnect + 30,
      );
      stop = true;
      await toSurvivor;

      // Every POST to the survivor succeeded; a client retries those the victim never answered.
      expect(survivorStatuses.every((status) => status === 200)).toBe(true);
      for (const body of failedOnVictim) {
        expect(await tryPost(survivor.url, body)).toBe(200);
      }

      // A last event: once each listener has it, it has everything sent before it.
      await sendSentinel(survivor.url, [...onSurvivor, ...resumed], next());
      const rows = await processes.stored(userId);
      const published = survivorStatuses.length + failedOnVictim.length + 1;
      expect(rows.length).toBeGreaterThanOrEqual(published);
      expect(new Set(rows.map((r) => r.name)).size).toBe(rows.length);
      const retried = new Set(failedOnVictim.map((b) => b.name));
      for (const listener of [
        [onSurvivor[0]],
        [onSurvivor[1]],
        [onVictim[0], resumed[0]],
        [onVictim[1], resumed[1]],
      ]) {
        expectComplete(listener, rows, retried);
      }
      // Only the events of the one user went to the filtered listeners.
      expect(onSurvivor[1].events.every((e) => (e.data as NameEventBody).userId === userId)).toBe(
        true,
      );
      expect(survivor.exit).toBeUndefined();
    },
    PROCESS_TIMEOUT_MS,
  );

  afterAll(async () => {
    await survivor?.stop('SIGTERM');
  });
});
