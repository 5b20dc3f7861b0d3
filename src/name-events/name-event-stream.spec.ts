import { Subject } from 'rxjs';
import type { BusSubscription, NameEventDelivery } from '../bus/name-event-bus.js';
import { NameEventStream } from './name-event-stream.js';
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
  const deliveries = new Subject<NameEventDelivery>();
  let released = 0;
  const subscription: BusSubscription = {
    deliveries$: deliveries.asObservable(),
    release: () => released++,
  };
  return {
    subscription,
    deliver: (...events: StoredNameEvent[]) => {
      for (const e of events) deliveries.next({ event: e, publishedAt: 0 });
    },
    fail: () => deliveries.error(new Error('lost')),
    released: () => released,
  };
}

describe('NameEventStream', () => {
  it('sends the backlog, then what arrived meanwhile past it, then live, skipping what the backlog covered', () => {
    const bus = fakeBus();
    const stream = new NameEventStream(bus.subscription, undefined);
    // Arrived while the backlog was read: 5 is also in the backlog, 7 is not.
    bus.deliver(event(5), event(7));
    const ids: string[] = [];
    stream
      .events({ lastEventId: 3n, backlog: [event(4), event(5), event(6)] })
      .subscribe((e) => ids.push(e.id));
    bus.deliver(event(6), event(8), event(2));
    expect(ids).toEqual(['4', '5', '6', '7', '8', '2']);
  });

  it('drops what arrived meanwhile that the client already had (up to its Last-Event-ID)', () => {
    const bus = fakeBus();
    const stream = new NameEventStream(bus.subscription, undefined);
    bus.deliver(event(9), event(10), event(11));
    const ids: string[] = [];
    stream.events({ lastEventId: 10n, backlog: [] }).subscribe((e) => ids.push(e.id));
    expect(ids).toEqual(['11']);
  });

  it("keeps only one user's events with a user filter", () => {
    const bus = fakeBus();
    const stream = new NameEventStream(bus.subscription, 'u2');
    const ids: string[] = [];
    stream.events({ backlog: [] }).subscribe((e) => ids.push(e.id));
    bus.deliver(event(1, 'u1'), event(2, 'u2'), event(3, 'u1'));
    expect(ids).toEqual(['2']);
  });

  it('reports a bus failure before it was subscribed, and releases the subscription once', () => {
    const bus = fakeBus();
    const stream = new NameEventStream(bus.subscription, undefined);
    bus.fail();
    expect(stream.failed).toBe(true);
    let error: unknown;
    const subscription = stream.events({ backlog: [] }).subscribe({
      error: (e: unknown) => {
        error = e;
      },
    });
    expect((error as Error).message).toBe('lost');
    subscription.unsubscribe();
    stream.close();
    expect(bus.released()).toBe(1);
  });

  it('waits for the pace before each replayed event', async () => {
    const bus = fakeBus();
    const stream = new NameEventStream(bus.subscription, undefined);
    let open!: () => void;
    const gate = new Promise<void>((resolve) => (open = resolve));
    const ids: string[] = [];
    stream
      .events({ lastEventId: 0n, backlog: [event(1), event(2)] }, () =>
        ids.length === 1 ? gate : undefined,
      )
      .subscribe((e) => ids.push(e.id));
    bus.deliver(event(3));
    expect(ids).toEqual(['1']);
    open();
    await gate;
    await Promise.resolve();
    expect(ids).toEqual(['1', '2', '3']);
  });
});
