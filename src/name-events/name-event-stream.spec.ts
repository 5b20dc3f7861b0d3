import { Subject } from 'rxjs';
import type { BusSubscription } from '../bus/name-event-bus.js';
import {
  ListenerOverflowError,
  NameEventStream,
  type ReplayWindow,
  type StreamPacing,
} from './name-event-stream.js';
import type { StoredNameEvent } from './name-event.types.js';

function event(id: number, userId = 'u1'): StoredNameEvent {
  return {
    id: String(id),
    userId,
    type: 'username',
    name: `n${id}`,
    changedAt: '2024-01-01T00:00:00.000Z',
  };
}

/** A bus subscription whose deliveries the test drives. */
function fakeBus() {
  const deliveries = new Subject<StoredNameEvent>();
  let released = 0;
  const subscription: BusSubscription = {
    deliveries$: deliveries.asObservable(),
    release: () => released++,
  };
  return {
    subscription,
    deliver: (...events: StoredNameEvent[]) => {
      for (const e of events) deliveries.next(e);
    },
    fail: () => deliveries.error(new Error('lost')),
    released: () => released,
  };
}

/** A replay window over `stored`, read `pageSize` events at a time; records where each read began. */
function windowOver(stored: StoredNameEvent[], pageSize = 100) {
  const reads: bigint[] = [];
  const window: ReplayWindow = {
    first: BigInt(stored[0].id),
    last: BigInt(stored.at(-1)!.id),
    readPage: (afterId) => {
      reads.push(afterId);
      return Promise.resolve(stored.filter((e) => BigInt(e.id) > afterId).slice(0, pageSize));
    },
  };
  return { window, reads };
}

/** Lets every pending promise callback run. */
const settle = () => new Promise((resolve) => setImmediate(resolve));

const pacing = (overrides: Partial<StreamPacing>): StreamPacing => ({
  canTake: () => true,
  ready: () => Promise.resolve(),
  schedule: (read) => read(),
  sizeOf: () => 0,
  holdLimit: Infinity,
  ...overrides,
});

describe('NameEventStream', () => {
  it('sends the replay window, then what arrived meanwhile past it, then live, skipping what the window covered', async () => {
    const bus = fakeBus();
    const stream = new NameEventStream(bus.subscription, undefined);
    // Arrived while the window was read: 5 is also in the window, 7 is not.
    bus.deliver(event(5), event(7));
    const ids: string[] = [];
    const { window } = windowOver([event(4), event(5), event(6)]);
    stream.resume(3n, window);
    stream.events().subscribe((e) => ids.push(e.id));
    await settle();
    bus.deliver(event(6), event(8), event(2));
    expect(ids).toEqual(['4', '5', '6', '7', '8', '2']);
  });

  it('drops what arrived meanwhile that the client already had (up to its Last-Event-ID)', async () => {
    const bus = fakeBus();
    const stream = new NameEventStream(bus.subscription, undefined);
    bus.deliver(event(9), event(10), event(11));
    const ids: string[] = [];
    stream.resume(10n);
    stream.events().subscribe((e) => ids.push(e.id));
    await settle();
    expect(ids).toEqual(['11']);
  });

  it("keeps only one user's events with a user filter", async () => {
    const bus = fakeBus();
    const stream = new NameEventStream(bus.subscription, 'u2');
    const ids: string[] = [];
    stream.events().subscribe((e) => ids.push(e.id));
    await settle();
    bus.deliver(event(1, 'u1'), event(2, 'u2'), event(3, 'u1'));
    expect(ids).toEqual(['2']);
  });

  it('reports a bus failure before it was subscribed, and releases the subscription once', async () => {
    const bus = fakeBus();
    const stream = new NameEventStream(bus.subscription, undefined);
    bus.fail();
    expect(stream.failed).toBe(true);
    let error: unknown;
    const subscription = stream.events().subscribe({
      error: (e: unknown) => {
        error = e;
      },
    });
    await settle();
    expect((error as Error).message).toBe('lost');
    subscription.unsubscribe();
    stream.close();
    expect(bus.released()).toBe(1);
  });

  it('reads a page only once the listener is ready, and reads again from where it stopped what it could not take', async () => {
    const bus = fakeBus();
    const stream = new NameEventStream(bus.subscription, undefined);
    const { window, reads } = windowOver(
      [1, 2, 3, 4, 5].map((id) => event(id)),
      3,
    );
    const ids: string[] = [];
    // Backed up after every second event, until the test lets it go on.
    let gate: Promise<void> | undefined;
    let goOn!: () => void;
    let taken = 0;
    const canTake = () => ids.length === taken || ids.length % 2 !== 0;
    const ready = () => {
      gate ??= new Promise<void>((resolve) => {
        goOn = () => {
          taken = ids.length;
          gate = undefined;
          resolve();
        };
      });
      return gate;
    };
    stream.resume(0n, window);
    stream.events(pacing({ canTake, ready })).subscribe((e) => ids.push(e.id));
    await settle();
    // One page of three read; the third event was let go when the listener backed up.
    expect([ids, reads]).toEqual([['1', '2'], [0n]]);
    bus.deliver(event(6));
    goOn();
    await settle();
    expect([ids, reads]).toEqual([
      ['1', '2', '3', '4'],
      [0n, 2n],
    ]);
    goOn();
    await settle();
    expect([ids, reads]).toEqual([
      ['1', '2', '3', '4', '5', '6'],
      [0n, 2n, 4n],
    ]);
  });

  it('runs each page read through the schedule', async () => {
    const bus = fakeBus();
    const stream = new NameEventStream(bus.subscription, undefined);
    const { window } = windowOver(
      [1, 2, 3].map((id) => event(id)),
      2,
    );
    let scheduled = 0;
    const ids: string[] = [];
    const schedule = (read: () => Promise<void>) => {
      scheduled++;
      return read();
    };
    stream.resume(0n, window);
    stream.events(pacing({ schedule })).subscribe((e) => ids.push(e.id));
    await settle();
    expect([ids, scheduled]).toEqual([['1', '2', '3'], 2]);
  });

  it('ends with a ListenerOverflowError once the live events held during the replay outgrow the bound', async () => {
    const bus = fakeBus();
    const stream = new NameEventStream(bus.subscription, undefined);
    const { window } = windowOver([event(1), event(2)], 1);
    let open!: () => void;
    const canTake = () => ids.length !== 1;
    const ready = () => new Promise<void>((resolve) => (open = resolve));
    const ids: string[] = [];
    let error: unknown;
    stream.resume(0n, window);
    stream
      .events(pacing({ canTake, ready, sizeOf: () => 40, holdLimit: 100 }))
      .subscribe({ next: (e) => ids.push(e.id), error: (e: unknown) => (error = e) });
    await settle();
    bus.deliver(event(3), event(4));
    expect(error).toBeUndefined();
    bus.deliver(event(5));
    open();
    await settle();
    expect(ids).toEqual(['1']);
    expect(error).toBeInstanceOf(ListenerOverflowError);
  });
});
