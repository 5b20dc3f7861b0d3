import { afterEach, beforeEach, describe, expect, it, jest } from '@jest/globals';
import { ACK_GATHER_MS, WebhookAcks } from './webhook-acks.js';
import type {
  DeliveredUpTo,
  WebhookDeliveriesRepository,
} from './webhook-deliveries.repository.js';

/** The statements WebhookAcks makes, recorded; `fail` makes the next one throw. */
class Statements {
  readonly made: (readonly [string, DeliveredUpTo])[][] = [];
  fail = false;

  delivered(records: readonly (readonly [string, DeliveredUpTo])[]): Promise<void> {
    if (this.fail) {
      this.fail = false;
      return Promise.reject(new Error('connection lost'));
    }
    this.made.push([...records]);
    return Promise.resolve();
  }
}

describe('WebhookAcks', () => {
  let statements: Statements;
  let acks: WebhookAcks;

  beforeEach(() => {
    jest.useFakeTimers();
    statements = new Statements();
    acks = new WebhookAcks(statements as unknown as WebhookDeliveriesRepository);
  });
  afterEach(() => {
    jest.useRealTimers();
  });

  it('records the last 2xx of each endpoint, and the furthest read, in one statement', async () => {
    acks.delivered('1', { eventId: '10', through: '10' });
    acks.delivered('2', { eventId: '11', through: '11' });
    acks.delivered('1', { eventId: '12', through: '15' });
    // A read past events that are not the endpoint's: its 2xx stays, the position moves.
    acks.delivered('2', { eventId: null, through: '20' });
    await jest.advanceTimersByTimeAsync(ACK_GATHER_MS);
    expect(statements.made).toEqual([
      [
        ['1', { eventId: '12', through: '15' }],
        ['2', { eventId: '11', through: '20' }],
      ],
    ]);
  });

  it('records a 2xx at once after a quiet spell, and those that follow within ACK_GATHER_MS together', async () => {
    acks.delivered('1', { eventId: '10', through: '10' });
    await jest.advanceTimersByTimeAsync(0);
    expect(statements.made).toEqual([[['1', { eventId: '10', through: '10' }]]]);

    acks.delivered('1', { eventId: '11', through: '11' });
    acks.delivered('2', { eventId: '12', through: '12' });
    await jest.advanceTimersByTimeAsync(ACK_GATHER_MS - 1);
    expect(statements.made).toHaveLength(1);
    await jest.advanceTimersByTimeAsync(1);
    expect(statements.made.slice(1)).toEqual([
      [
        ['1', { eventId: '11', through: '11' }],
        ['2', { eventId: '12', through: '12' }],
      ],
    ]);

    await jest.advanceTimersByTimeAsync(ACK_GATHER_MS);
    acks.delivered('2', { eventId: '13', through: '13' });
    await jest.advanceTimersByTimeAsync(0);
    expect(statements.made.slice(2)).toEqual([[['2', { eventId: '13', through: '13' }]]]);
  });

  it('gives what a failed statement was to record to the next, without undoing a later 2xx', async () => {
    acks.delivered('1', { eventId: '10', through: '14' });
    statements.fail = true;
    await jest.advanceTimersByTimeAsync(ACK_GATHER_MS);
    expect(statements.made).toEqual([]);
    expect(await acks.take('1')).toEqual({ eventId: '10', through: '14' });

    acks.untake('1', { eventId: '10', through: '14' });
    acks.delivered('1', { eventId: '12', through: '12' });
    expect(await acks.take('1')).toEqual({ eventId: '12', through: '14' });
    expect(await acks.take('1')).toBeNull();
  });
});
