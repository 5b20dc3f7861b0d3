import { randomBytes } from 'node:crypto';
import { BUS_DOWN, LISTEN, PUBLISH } from './api.js';
import type { TestDatabase } from './database.js';
import { EventSourceClient } from './event-source-client.js';
import { http } from './http.js';
import { KeepAliveClient, type Outcome } from './keep-alive-client.js';
import { waitFor } from './ports.js';

export interface Published {
  name: string;
  body: { userId: string; type: string; name: string; changedAt: string };
  outcome: Outcome;
  /** When its answer came. */
  at: number;
  /** The answer to its retry, for one that was not acknowledged. */
  retry?: Outcome;
}

/** An answer as the figures show it: `200`, `500 {"message":…}`, or the network error. */
export function describeOutcome(outcome: Outcome): string {
  return outcome.status === undefined ? outcome.error : `${outcome.status} ${outcome.body}`.trim();
}

/**
 * Traffic over instances while the test breaks Redis under them: listeners on each instance
 * that reconnect (with Last-Event-ID) after an error as the live page does, and publishers
 * POSTing one event after the other, alternating between the instances, each event recorded
 * with its answer. Readiness of the first instance is polled meanwhile.
 */
export class ClusterTraffic {
  readonly userId = `cluster-${randomBytes(4).toString('hex')}`;
  readonly published: Published[] = [];
  readonly listeners: EventSourceClient[] = [];
  /** Readiness answers of the first instance, by when the probe started. */
  readonly readiness: { at: number; status: number }[] = [];
  private readonly clients: KeepAliveClient[];
  private stopped = false;
  private running: Promise<unknown>[] = [];

  constructor(private readonly urls: string[]) {
    this.clients = urls.map((url) => new KeepAliveClient(url));
  }

  /** `perInstance` listeners on each instance, connected. */
  async listen(perInstance: number): Promise<void> {
    for (let i = 0; i < perInstance; i++) {
      for (const url of this.urls) {
        const listener = new EventSourceClient(`${url}${LISTEN}`, { retryAfterErrors: true });
        this.listeners.push(listener);
        listener.open();
      }
    }
    await waitFor('the listeners to connect', () => this.listeners.every((l) => l.connected));
  }

  /** Starts `publishers` concurrent publishers and the readiness probe. */
  start(publishers: number): void {
    let n = 0;
    for (let p = 0; p < publishers; p++) {
      this.running.push(
        (async () => {
          while (!this.stopped) {
            const i = ++n;
            const body = {
              userId: this.userId,
              type: 'username',
              name: `${this.userId}-${i}`,
              changedAt: new Date(Date.UTC(2024, 0, 1) + i * 1000).toISOString(),
            };
            const outcome = await this.clients[i % this.clients.length].request(
              'POST',
              PUBLISH,
              body,
            );
            this.published.push({ name: body.name, body, outcome, at: Date.now() });
            await new Promise((resolve) => setTimeout(resolve, 20));
          }
        })(),
      );
    }
    // A probe every 100 ms, each on its own: one that waits for Redis does not delay the next.
    const probes: Promise<void>[] = [];
    this.running.push(
      (async () => {
        while (!this.stopped) {
          const at = Date.now();
          probes.push(
            http(`${this.urls[0]}/api/health/ready`).then(
              (ready) => void this.readiness.push({ at, status: ready.status }),
              () => void this.readiness.push({ at, status: 0 }),
            ),
          );
          await new Promise((resolve) => setTimeout(resolve, 100));
        }
        await Promise.all(probes);
      })(),
    );
  }

  /** The last `count` answers were all 200 (and there were at least `after` + count). */
  okInARow(count: number, after = 0): boolean {
    const last = this.published.slice(-count);
    return (
      this.published.length >= after + count &&
      last.length === count &&
      last.every((p) => p.outcome.status === 200)
    );
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await Promise.all(this.running);
  }

  /** A client retries what was not acknowledged (a repeat is stored once, sent with its id). */
  async retryFailed(): Promise<Published[]> {
    const failed = this.published.filter((p) => p.outcome.status !== 200);
    for (const p of failed) p.retry = await this.clients[0].request('POST', PUBLISH, p.body);
    return failed;
  }

  /** The stored events of the traffic's user, in id order. */
  stored(db: TestDatabase): Promise<{ id: string; name: string }[]> {
    return db.query<{ id: string; name: string }>(
      `SELECT id::text AS id, name FROM name_change_events WHERE user_id = $1
        ORDER BY name_change_events.id`,
      [this.userId],
    );
  }

  /** Resolves once every listener has every one of `ids` (rejects after 30 s). */
  untilDelivered(ids: string[]): Promise<true> {
    return waitFor(
      'every listener to have every stored event',
      () => this.listeners.every((l) => ids.every((id) => l.events.some((e) => e.id === id))),
      { timeoutMs: 30_000 },
    );
  }

  /** For each listener, the ids of `ids` it never received. */
  lost(ids: string[]): string[][] {
    return this.listeners.map((l) => ids.filter((id) => !l.events.some((e) => e.id === id)));
  }

  /**
   * Once stopped: retries what was not acknowledged, waits (up to 30 s) for every listener to
   * have every stored event, and returns what the figures and checks need.
   */
  async settle(db: TestDatabase) {
    const failed = await this.retryFailed();
    const stored = await this.stored(db);
    const storedIds = stored.map((r) => r.id);
    await this.untilDelivered(storedIds).catch(() => undefined);
    const figures = {
      postsAnswered: this.published.length,
      answeredNon200: failed.map((p) => ({
        answer: describeOutcome(p.outcome),
        retry: describeOutcome(p.retry!),
      })),
      listenerAttempts: this.listeners.map((l) => l.attempts),
      longestListenerGapMs: Math.max(...this.listeners.map((l) => l.longestGap)),
      eventsLostPerListener: this.lost(storedIds).map((ids) => ids.length),
    };
    return { failed, stored, figures };
  }

  /**
   * Nothing acknowledged was lost: every POST stored once; what was not acknowledged was the
   * bus-unavailable 500 (never "no listener") and its retry 200; every listener has every
   * stored event, the newly stored ones in id order (only a retried POST's may come again or
   * late).
   */
  expectNothingLost(failed: Published[], stored: { id: string; name: string }[]): void {
    expect(stored.map((r) => r.name).sort()).toEqual(this.published.map((p) => p.name).sort());
    for (const p of failed) {
      const answer: unknown =
        p.outcome.status === undefined ? p.outcome.error : JSON.parse(p.outcome.body);
      expect([p.name, p.outcome.status, answer]).toEqual([p.name, 500, BUS_DOWN]);
      expect([p.name, p.retry!.status]).toEqual([p.name, 200]);
    }
    const storedIds = stored.map((r) => r.id);
    expect(this.lost(storedIds)).toEqual(this.listeners.map(() => []));
    const retried = new Set(failed.map((p) => p.name));
    for (const listener of this.listeners) {
      const fresh = listener.events.filter(
        (e) => !retried.has((JSON.parse(e.data) as { name: string }).name),
      );
      expect(fresh.map((e) => e.id)).toEqual(
        stored.filter((r) => !retried.has(r.name)).map((r) => r.id),
      );
    }
  }

  close(): void {
    this.stopped = true;
    for (const listener of this.listeners) listener.close();
    for (const client of this.clients) client.close();
  }
}
