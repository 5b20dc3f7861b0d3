import { afterEach, beforeEach, describe, expect, it, jest } from '@jest/globals';
import { Logger } from '@nestjs/common';
import { BusUnavailableError } from '../bus/name-event-bus.js';
import { StorageUnavailableError } from '../name-events/name-event.types.js';
import { MetricsService } from '../metrics/metrics.service.js';
import { DetectorMetrics } from './detector.metrics.js';
import type {
  KnownNameKey,
  KnownNameValue,
  KnownNamesRepository,
  ObservedMember,
} from '../name-events/known-names.repository.js';
import type { NameEventsService } from '../name-events/name-events.service.js';
import {
  userPartitionOf,
  type NewNameEvent as NameChange,
  type PublishOutcome,
} from '../name-events/name-event.types.js';
import { DetectorOutbox } from './detector-outbox.js';
import { detectorSettings, type DetectorSettings } from './detector.settings.js';
import type { MemberObservation } from './member-observation.js';
import { ReconciliationRun } from './reconciliation-run.js';
import type { ShardProgressRepository } from './shard-progress.repository.js';

const GUILD = '800000000000000001';
const AT = new Date('2025-03-04T05:06:07.089Z');

const id = (n: number) => `70000000000000000${n}`;

/** User `n` seen with `username` (no display name, no nickname). */
const seen = (n: number, username: string): MemberObservation => ({
  guildId: GUILD,
  userId: id(n),
  username,
  globalName: null,
  nickname: null,
  at: AT,
});

/** No observation here comes from a gateway session: nothing is replayed, nothing to keep. */
const noProgress = {
  storedAmong: () => Promise.resolve(undefined),
  save: () => Promise.resolve(),
} as unknown as ShardProgressRepository;

const key = (k: KnownNameKey) => `${k.userId}/${k.field}/${k.guildId}`;

/** The known names table, in memory. */
class MemoryKnownNames {
  values = new Map<string, KnownNameValue>();
  /** The user ids of each read: which observations each batch held. */
  readonly reads: string[][] = [];

  findOfMembers(members: readonly ObservedMember[]): Promise<KnownNameValue[]> {
    this.reads.push([...new Set(members.map((m) => m.userId))]);
    return Promise.resolve(
      members.flatMap(({ userId, guildId }) =>
        [
          { userId, field: 'username', guildId: '' } as const,
          { userId, field: 'global_name', guildId: '' } as const,
          { userId, field: 'nickname', guildId } as const,
        ].flatMap((k) => this.values.get(key(k)) ?? []),
      ),
    );
  }

  saveMany(values: readonly KnownNameValue[]): Promise<void> {
    for (const value of values) this.values.set(key(value), value);
    return Promise.resolve();
  }

  username(n: number): string | null | undefined {
    return this.values.get(`${id(n)}/username/`)?.name;
  }
}

type Script = (attempt: number) => Error | 'bus-down-after-commit' | number;

/**
 * publishDetected as NameEventsService runs it: `detect` in a transaction (rolled back on a
 * storage failure), the changes stored, then broadcast (`receivers` from the script).
 */
class ScriptedPublisher {
  readonly stored: NameChange[] = [];
  readonly attempts: number[] = [];
  /** The partitions each attempt locked. */
  readonly partitions: (readonly number[])[] = [];
  gate?: Promise<void>;
  /** A gate for some partitions only. */
  gateOf?: (partitions: readonly number[]) => Promise<void> | undefined;

  constructor(
    private readonly known: MemoryKnownNames,
    private readonly script: Script = () => 0,
  ) {}

  /** Users who opted out: refused, as the domain's recording guards refuse them. */
  optedOut: ReadonlySet<string> = new Set();

  refusedAmong(userIds: readonly string[]): Promise<Set<string>> {
    return Promise.resolve(new Set(userIds.filter((userId) => this.optedOut.has(userId))));
  }

  async publishDetected(
    partitions: readonly number[],
    detect: () => Promise<NameChange[]>,
  ): Promise<PublishOutcome[]> {
    this.attempts.push(Date.now());
    this.partitions.push(partitions);
    await this.gate;
    await this.gateOf?.(partitions);
    const outcome = this.script(this.attempts.length);
    const before = new Map(this.known.values);
    const changes = await detect();
    if (outcome instanceof Error) {
      this.known.values = before;
      throw outcome;
    }
    const stored = changes.map((change) => {
      const existing = this.stored.findIndex((s) => JSON.stringify(s) === JSON.stringify(change));
      if (existing >= 0) return { index: existing, created: false };
      this.stored.push(change);
      return { index: this.stored.length - 1, created: true };
    });
    if (outcome === 'bus-down-after-commit') throw new BusUnavailableError('Redis publish failed');
    return stored.map(({ index, created }, i) => ({
      event: {
        id: String(index + 1),
        ...changes[i],
        changedAt: changes[i].changedAt.toISOString(),
      },
      created,
      receivers: outcome,
    }));
  }

  names(): string[] {
    return this.stored.map((s) => s.name);
  }
}

async function until(condition: () => boolean, timeoutMs = 3_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`Condition not met within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

/** What the outbox counted in `metrics`, by source. */
async function counted(metrics: DetectorMetrics) {
  const bySource = async (counter: DetectorMetrics['detectorChanges']) => {
    const { values } = await counter.get();
    return Object.fromEntries(values.map(({ labels, value }) => [String(labels.source), value]));
  };
  const [failures] = (await metrics.detectorPublishFailures.get()).values;
  return {
    compared: await bySource(metrics.detectorMembersCompared),
    changes: await bySource(metrics.detectorChanges),
    failures: failures.value,
  };
}

describe('DetectorOutbox', () => {
  let settings: DetectorSettings;
  let known: MemoryKnownNames;
  let logs: string[];
  let warnings: string[];
  let errors: string[];
  let metrics: DetectorMetrics;
  const outboxes: DetectorOutbox[] = [];

  function outbox(
    publisher: ScriptedPublisher,
    overrides: Partial<DetectorSettings> = {},
    optedOut: ReadonlySet<string> = new Set(),
  ) {
    publisher.optedOut = optedOut;
    const created = new DetectorOutbox(
      publisher as unknown as NameEventsService,
      known as unknown as KnownNamesRepository,
      noProgress,
      { ...settings, ...overrides },
      metrics,
    );
    outboxes.push(created);
    return created;
  }

  const idle = (o: DetectorOutbox) => () => o.backlog.live + o.backlog.reconciling === 0;

  beforeEach(() => {
    settings = {
      ...detectorSettings({
        token: 'x',
        enabled: true,
        shardCount: undefined,
        leaseMs: 30_000,
        compareConcurrency: 1,
        apiUrl: undefined,
        gatewayUrl: undefined,
      }),
      publishRetryMs: 40,
      publishRetryMaxMs: 100,
    };
    known = new MemoryKnownNames();
    metrics = new DetectorMetrics(new MetricsService());
    logs = [];
    warnings = [];
    errors = [];
    for (const [level, sink] of [
      ['log', logs],
      ['warn', warnings],
      ['error', errors],
    ] as const) {
      jest.spyOn(Logger.prototype, level).mockImplementation((message: unknown) => {
        sink.push(String(message));
      });
    }
  });

  afterEach(async () => {
    await Promise.all(outboxes.splice(0).map((o) => o.stop()));
    jest.restoreAllMocks();
  });

  it('compares live updates in the order they arrive, and treats "no listener" as done', async () => {
    const publisher = new ScriptedPublisher(known, () => 0);
    const o = outbox(publisher);
    o.observeLive([seen(1, 'a')]);
    o.observeLive([seen(1, 'b'), seen(1, 'c')]);
    o.observeLive([seen(1, 'c')]);
    await until(() => known.username(1) === 'c' && idle(o)());
    expect(publisher.names()).toEqual(['a', 'b']);
    expect(logs).toEqual([
      `Recorded a username change of user ${id(1)} as event 1; no listener connected`,
      `Recorded a username change of user ${id(1)} as event 2; no listener connected`,
    ]);
    expect(warnings).toEqual([]);
  });

  it("lets live updates overtake a full view, taking the same user's waiting members along", async () => {
    const publisher = new ScriptedPublisher(known);
    let open!: () => void;
    publisher.gate = new Promise((resolve) => (open = resolve));
    const o = outbox(publisher, { batchSize: 2 });
    const done: ReconciliationRun[] = [];
    const run = new ReconciliationRun(GUILD, 0, false, (r) => done.push(r));
    o.observeFullView(
      [1, 2, 3, 4, 5].map((n) => seen(n, `u${n}`)),
      run,
    );
    await until(() => publisher.attempts.length === 1); // [1, 2] under way
    o.observeLive([seen(4, 'u4-renamed'), seen(9, 'u9')]);
    expect(o.backlog).toEqual({ live: 3, reconciling: 4 }); // [1, 2] under way, [3, 5] waiting
    open();
    await until(() => done.length === 1);
    // User 4's full-view member went along with the live update: compared first, it makes
    // the update a change from "u4" (alone, the update would have been a first sighting).
    expect(known.reads).toEqual([[id(1), id(2)], [id(4)], [id(9)], [id(3), id(5)]]);
    expect(publisher.names()).toEqual(['u4']);
    expect(done[0]).toMatchObject({ members: 5, changes: 0 });
    expect(await counted(metrics)).toEqual({
      compared: { live: 2, reconciliation: 5 },
      changes: { live: 1, reconciliation: 0 },
      failures: 0,
    });
  });

  it('counts the changes of a full view, and finishes it once complete and compared', async () => {
    for (const n of [1, 2, 3]) known.values.set(`${id(n)}/username/`, seenValue(n, `old${n}`));
    const publisher = new ScriptedPublisher(known);
    const o = outbox(publisher);
    const done: ReconciliationRun[] = [];
    const run = new ReconciliationRun(GUILD, 0, true, (r) => done.push(r));
    o.observeFullView([seen(1, 'old1'), seen(2, 'new2')], run);
    await until(idle(o));
    expect(done).toEqual([]);
    o.observeFullView([seen(3, 'new3'), seen(4, 'first')], run);
    run.complete();
    await until(() => done.length === 1);
    expect(done[0]).toMatchObject({ guildId: GUILD, members: 4, changes: 2 });
    expect(await counted(metrics)).toMatchObject({
      compared: { reconciliation: 4 },
      changes: { reconciliation: 2 },
    });
    expect(publisher.names()).toEqual(['old2', 'old3']);
    expect(logs).toEqual([
      `Recorded a username change of user ${id(2)} as event 1 (found by reconciliation); no listener connected`,
      `Recorded a username change of user ${id(3)} as event 2 (found by reconciliation); no listener connected`,
    ]);
  });

  it('compares users of other partitions alongside, each user in the order seen', async () => {
    // Users 1 to 9 by the lane of their partition, with two lanes: even partitions, odd ones.
    const [even, odd] = [0, 1].map((lane) =>
      [1, 2, 3, 4, 5, 6, 7, 8, 9].find((n) => userPartitionOf(id(n)) % 2 === lane)!,
    );
    const publisher = new ScriptedPublisher(known);
    let open!: () => void;
    const evenGate = new Promise<void>((resolve) => (open = resolve));
    publisher.gateOf = (partitions) => (partitions[0] === 0 ? evenGate : undefined);
    const o = outbox(publisher, { compareConcurrency: 2 });
    o.observeLive([seen(even, 'e1'), seen(odd, 'o1')]);
    o.observeLive([seen(even, 'e2'), seen(odd, 'o2')]);
    // The odd lane goes on while the even one waits for its lock.
    await until(() => known.username(odd) === 'o2');
    expect(known.username(even)).toBeUndefined();
    expect(o.backlog).toEqual({ live: 2, reconciling: 0 }); // e1 under way, e2 waiting
    open();
    await until(() => known.username(even) === 'e2' && idle(o)());
    expect(publisher.partitions).toEqual([
      [0, 2, 4, 6],
      [1, 3, 5, 7],
      [1, 3, 5, 7],
      [0, 2, 4, 6],
    ]);
    expect(known.reads).toEqual([[id(odd)], [id(odd)], [id(even)], [id(even)]]);
    expect(publisher.names()).toEqual(['o1', 'e1']);
  });

  it('retries a storage failure with doubling back-off, comparing again each time', async () => {
    known.values.set(`${id(1)}/username/`, seenValue(1, 'old'));
    const publisher = new ScriptedPublisher(known, (attempt) =>
      attempt <= 3 ? new StorageUnavailableError('connect ECONNREFUSED 127.0.0.1:5432') : 1,
    );
    const o = outbox(publisher);
    o.observeLive([seen(1, 'new')]);
    await until(() => publisher.stored.length === 1);
    expect(publisher.attempts).toHaveLength(4);
    expect(known.reads).toHaveLength(4);
    const gaps = publisher.attempts.slice(1).map((at, i) => at - publisher.attempts[i]);
    // 40, 80, then capped at 100 ms (timers may fire a little late, never early)
    expect(gaps.map((gap, i) => gap >= [40, 80, 100][i] - 2)).toEqual([true, true, true]);
    expect(warnings).toEqual(
      [40, 80, 100].map(
        (wait, i) =>
          `Could not compare and publish 1 gateway observation(s) (attempt ${i + 1}; next in ${wait} ms): ` +
          'StorageUnavailableError: connect ECONNREFUSED 127.0.0.1:5432',
      ),
    );
    expect(logs).toEqual([
      `Recorded a username change of user ${id(1)} as event 1; sent to 1 instance(s) with listeners`,
    ]);
    expect(await counted(metrics)).toMatchObject({ changes: { live: 1 }, failures: 3 });
  });

  it('after a broadcast failure sends the committed changes again, without comparing again', async () => {
    known.values.set(`${id(1)}/username/`, seenValue(1, 'old'));
    const publisher = new ScriptedPublisher(known, (attempt) =>
      attempt === 1 ? 'bus-down-after-commit' : 2,
    );
    const o = outbox(publisher);
    o.observeLive([seen(1, 'new')]);
    o.observeLive([seen(1, 'newer')]);
    await until(() => known.username(1) === 'newer' && idle(o)() && publisher.stored.length === 2);
    expect(publisher.attempts).toHaveLength(3);
    expect(known.reads).toEqual([[id(1)], [id(1)]]);
    expect(publisher.names()).toEqual(['old', 'new']);
    expect(warnings).toEqual([
      'Could not broadcast the name changes found in 1 gateway observation(s) (attempt 1; next in 40 ms): ' +
        `BusUnavailableError: Redis publish failed: {"userId":"${id(1)}","type":"username","name":"old","changedAt":"2025-03-04T05:06:07.089Z"}`,
    ]);
    expect(logs[0]).toBe(
      `Recorded a username change of user ${id(1)} as event 1 (stored already); sent to 2 instance(s) with listeners`,
    );
  });

  it('neither compares nor remembers a user who opted out, and records the others', async () => {
    const publisher = new ScriptedPublisher(known);
    const o = outbox(publisher, {}, new Set([id(2)]));
    o.observeLive([seen(1, 'a'), seen(2, 'secret')]);
    o.observeLive([seen(1, 'b'), seen(2, 'secret-renamed')]);
    await until(() => known.username(1) === 'b' && idle(o)());
    expect(publisher.names()).toEqual(['a']);
    expect(known.username(2)).toBeUndefined();
    expect(warnings).toEqual([]);
  });

  it('never throws to the caller, whatever the publish path throws', async () => {
    const publisher = new ScriptedPublisher(known, (attempt) =>
      attempt === 1 ? new TypeError('unexpected') : 0,
    );
    const o = outbox(publisher);
    expect(() => o.observeLive([seen(1, 'n')])).not.toThrow();
    await until(() => publisher.attempts.length === 2 && idle(o)());
    expect(warnings).toEqual([
      'Could not compare and publish 1 gateway observation(s) (attempt 1; next in 40 ms): TypeError: unexpected',
    ]);
  });

  it('drops (and logs) what is past its bound while an outage lasts', () => {
    const publisher = new ScriptedPublisher(known, () => new StorageUnavailableError('down'));
    const o = outbox(publisher, { maxPending: 2, maxReconciling: 1 });
    const dropped: string[] = [];
    o.onLiveDropped((guildId) => dropped.push(guildId));
    o.observeLive([seen(1, 'a'), seen(2, 'b'), seen(3, 'c')]);
    const run = new ReconciliationRun(GUILD, 0, true, () => undefined);
    o.observeFullView([seen(4, 'd'), seen(5, 'e')], run);
    expect(run.members).toBe(1);
    // The dropped live update's server is to be viewed again; a full view's member dropped
    // asks for no view (a server larger than the bound would be asked for without end).
    expect(dropped).toEqual([GUILD]);
    expect(errors).toEqual([
      `Dropped a live update of user ${id(3)}: 2 are waiting to be compared; server ${GUILD}'s members are asked for again`,
      `Dropped 1 member(s) of server ${GUILD} from reconciliation: 1 are waiting`,
    ]);
  });

  it('lets a member request wait until few enough members wait for reconciliation', async () => {
    const publisher = new ScriptedPublisher(known);
    let open!: () => void;
    publisher.gate = new Promise((resolve) => (open = resolve));
    const o = outbox(publisher, { batchSize: 1 });
    const run = new ReconciliationRun(GUILD, 0, true, () => undefined);
    o.observeFullView(
      [1, 2, 3, 4].map((n) => seen(n, `u${n}`)),
      run,
    );
    let roomFor2 = false;
    void o.whenReconcilingBelow(2).then(() => (roomFor2 = true));
    await until(() => publisher.attempts.length === 1);
    expect(o.backlog.reconciling).toBe(4); // 1 under way, 3 waiting
    expect(roomFor2).toBe(false);
    open();
    await until(() => roomFor2);
    expect(o.backlog.reconciling).toBeLessThan(3); // 1 under way, fewer than 2 waiting
  });

  it('stops retrying on stop(), says how much is left, and ignores what comes later', async () => {
    const publisher = new ScriptedPublisher(known, () => new StorageUnavailableError('down'));
    const o = outbox(publisher, { publishRetryMs: 60_000 });
    o.observeLive([seen(1, 'a'), seen(2, 'b')]);
    const run = new ReconciliationRun(GUILD, 0, true, () => undefined);
    o.observeFullView([seen(3, 'c')], run);
    await until(() => publisher.attempts.length === 1);
    const started = Date.now();
    await o.stop();
    expect(Date.now() - started).toBeLessThan(1_000);
    expect(publisher.attempts).toHaveLength(1);
    expect(o.backlog).toEqual({ live: 0, reconciling: 0 });
    expect(warnings.at(-1)).toBe(
      '3 gateway observation(s) not compared before shutdown: the known names keep their old ' +
        'values, so the next full view of those servers finds any change',
    );
    o.observeLive([seen(4, 'late')]);
    expect(warnings.at(-1)).toBe('Ignored 1 gateway observation(s) during shutdown');
  });
});

function seenValue(n: number, name: string): KnownNameValue {
  return { userId: id(n), field: 'username', guildId: '', name, seenAt: new Date(0) };
}
