import { afterEach, beforeEach, describe, expect, it, jest } from '@jest/globals';
import { Logger } from '@nestjs/common';
import { BusUnavailableError } from '../bus/name-event-bus.js';
import { StorageUnavailableError } from '../name-events/name-event.types.js';
import type { NameChange, PublishOutcome, PublishService } from '../publish/publish.service.js';
import { DetectorOutbox } from './detector-outbox.js';
import { detectorSettings, type DetectorSettings } from './detector.settings.js';

const change = (name: string): NameChange => ({
  userId: '700000000000000001',
  type: 'username',
  name,
  changedAt: new Date('2025-03-04T05:06:07.089Z'),
});

const shown = (name: string) =>
  `{"userId":"700000000000000001","type":"username","name":"${name}","changedAt":"2025-03-04T05:06:07.089Z"}`;

/** A PublishService double: answers from a script, records every call and its time. */
class ScriptedPublisher {
  readonly calls: { name: string; at: number }[] = [];
  constructor(private readonly script: (name: string, attempt: number) => Error | number) {}

  publish(change: NameChange): Promise<PublishOutcome> {
    const attempt = this.calls.filter((c) => c.name === change.name).length + 1;
    this.calls.push({ name: change.name, at: Date.now() });
    const outcome = this.script(change.name, attempt);
    if (outcome instanceof Error) return Promise.reject(outcome);
    return Promise.resolve({
      event: {
        id: String(this.calls.length),
        ...change,
        changedAt: change.changedAt.toISOString(),
      },
      created: true,
      receivers: outcome,
    });
  }
}

async function until(condition: () => boolean, timeoutMs = 3_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`Condition not met within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

describe('DetectorOutbox', () => {
  let settings: DetectorSettings;
  let logs: string[];
  let warnings: string[];
  let errors: string[];

  beforeEach(() => {
    settings = {
      ...detectorSettings({ token: 'x', leaseMs: 30_000 }, { keyPrefix: 'test' }),
      publishRetryMs: 40,
      publishRetryMaxMs: 100,
    };
    logs = [];
    warnings = [];
    errors = [];
    jest.spyOn(Logger.prototype, 'log').mockImplementation((message: unknown) => {
      logs.push(String(message));
    });
    jest.spyOn(Logger.prototype, 'warn').mockImplementation((message: unknown) => {
      warnings.push(String(message));
    });
    jest.spyOn(Logger.prototype, 'error').mockImplementation((message: unknown) => {
      errors.push(String(message));
    });
  });

  afterEach(() => {
    jest.restoreAllMocks();
  });

  it('publishes in detection order, and treats "no listener" (0 receivers) as done', async () => {
    const publisher = new ScriptedPublisher(() => 0);
    const outbox = new DetectorOutbox(publisher as unknown as PublishService, settings);
    outbox.enqueue(change('first'));
    outbox.enqueue(change('second'));
    await until(() => outbox.size === 0);
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(publisher.calls.map((c) => c.name)).toEqual(['first', 'second']);
    expect(logs).toEqual([
      'Recorded a username change of user 700000000000000001 as event 1; no listener connected',
      'Recorded a username change of user 700000000000000001 as event 2; no listener connected',
    ]);
    expect(warnings).toEqual([]);
  });

  it('retries a storage failure with doubling back-off, logging the event each time', async () => {
    const publisher = new ScriptedPublisher((_name, attempt) =>
      attempt <= 3 ? new StorageUnavailableError('connect ECONNREFUSED 127.0.0.1:5432') : 1,
    );
    const outbox = new DetectorOutbox(publisher as unknown as PublishService, settings);
    outbox.enqueue(change('old_name'));
    await until(() => outbox.size === 0);
    expect(publisher.calls).toHaveLength(4);
    const gaps = publisher.calls.slice(1).map((c, i) => c.at - publisher.calls[i].at);
    // 40, 80, then capped at 100 ms (timers may fire a little late, never early)
    expect(gaps.map((gap, i) => gap >= [40, 80, 100][i] - 2)).toEqual([true, true, true]);
    expect(warnings).toEqual(
      [1, 2, 3].map(
        (attempt) =>
          `Could not publish a detected name change (attempt ${attempt}; next in ${[40, 80, 100][attempt - 1]} ms): ` +
          `StorageUnavailableError: connect ECONNREFUSED 127.0.0.1:5432: ${shown('old_name')}`,
      ),
    );
  });

  it('retries a broadcast failure, and keeps later changes behind the one being retried', async () => {
    const publisher = new ScriptedPublisher((name, attempt) =>
      name === 'first' && attempt === 1 ? new BusUnavailableError('Redis publish failed') : 2,
    );
    const outbox = new DetectorOutbox(publisher as unknown as PublishService, settings);
    outbox.enqueue(change('first'));
    outbox.enqueue(change('second'));
    await until(() => outbox.size === 0);
    expect(publisher.calls.map((c) => c.name)).toEqual(['first', 'first', 'second']);
    expect(warnings).toEqual([
      `Could not publish a detected name change (attempt 1; next in 40 ms): BusUnavailableError: Redis publish failed: ${shown('first')}`,
    ]);
  });

  it('never throws to the caller, whatever the publish path throws', async () => {
    const publisher = new ScriptedPublisher((_name, attempt) =>
      attempt === 1 ? new TypeError('unexpected') : 0,
    );
    const outbox = new DetectorOutbox(publisher as unknown as PublishService, settings);
    expect(() => outbox.enqueue(change('n'))).not.toThrow();
    await until(() => outbox.size === 0);
    expect(publisher.calls).toHaveLength(2);
    expect(warnings).toEqual([
      `Could not publish a detected name change (attempt 1; next in 40 ms): TypeError: unexpected: ${shown('n')}`,
    ]);
  });

  it('drops (and logs) a change past the bound while an outage lasts', async () => {
    const publisher = new ScriptedPublisher(() => new StorageUnavailableError('down'));
    const outbox = new DetectorOutbox(publisher as unknown as PublishService, {
      ...settings,
      maxPending: 2,
    });
    outbox.enqueue(change('a'));
    outbox.enqueue(change('b'));
    outbox.enqueue(change('c'));
    expect(outbox.size).toBe(2);
    expect(errors).toEqual([
      `Dropped a detected name change: 2 are waiting to be published: ${shown('c')}`,
    ]);
    await outbox.stop();
  });

  it('stops retrying on stop(), logging what was not published', async () => {
    const publisher = new ScriptedPublisher(() => new StorageUnavailableError('down'));
    const outbox = new DetectorOutbox(publisher as unknown as PublishService, {
      ...settings,
      publishRetryMs: 60_000,
    });
    outbox.enqueue(change('a'));
    outbox.enqueue(change('b'));
    await until(() => publisher.calls.length === 1);
    const started = Date.now();
    await outbox.stop();
    expect(Date.now() - started).toBeLessThan(1_000);
    expect(publisher.calls).toHaveLength(1);
    expect(outbox.size).toBe(0);
    expect(errors).toEqual([
      `Detected name change not published before shutdown: ${shown('a')}`,
      `Detected name change not published before shutdown: ${shown('b')}`,
    ]);
    outbox.enqueue(change('late'));
    expect(errors.at(-1)).toBe(`Dropped a detected name change during shutdown: ${shown('late')}`);
  });
});
