import { describe, expect, it } from '@jest/globals';
import { Logger } from '@nestjs/common';
import type { MemberObservation } from './member-observation.js';
import { ObservationQueues, type Pending } from './observation-queues.js';
import { ReconciliationRun } from './reconciliation-run.js';

const AT = new Date('2025-03-04T05:00:00.000Z');
const seen = (userId: string, guildId = 'g1'): MemberObservation => ({
  guildId,
  userId,
  username: `name-${userId}`,
  globalName: undefined,
  nickname: undefined,
  at: AT,
});
const who = (batch: { observation: MemberObservation }[] | undefined) =>
  batch?.map(({ observation }) => `${observation.userId}@${observation.guildId}`);

describe('ObservationQueues', () => {
  it("takes every waiting full-view member of a user along with the user's live update, oldest first", () => {
    const queues = new ObservationQueues(
      { maxPending: 100, maxReconciling: 100 },
      new Logger('test'),
    );
    const run = new ReconciliationRun('g1', 0, false, () => undefined);
    queues.pushFullView([seen('1'), seen('2'), seen('3')], run);
    queues.pushFullView([seen('2', 'g2'), seen('4', 'g2')], run);
    expect(queues.counts).toEqual({ live: 0, reconciling: 5 });

    queues.pushLive([{ ...seen('2'), username: 'renamed' }]);
    expect(queues.counts).toEqual({ live: 3, reconciling: 3 });
    expect(who(queues.take(10)?.batch)).toEqual(['2@g1', '2@g2', '2@g1']);
    const rest = queues.take(10);
    expect(rest?.queue).toBe('reconcile');
    expect(who(rest?.batch)).toEqual(['1@g1', '3@g1', '4@g2']);
    expect(queues.take(10)).toBeUndefined();

    // Taken, a user has nothing left waiting: a later live update goes alone.
    queues.pushLive([seen('1')]);
    expect(who(queues.take(10)?.batch)).toEqual(['1@g1']);
    expect(queues.counts).toEqual({ live: 0, reconciling: 0 });
  });

  it('drops live updates past its bound, settles them, and names their servers to be viewed again', () => {
    const dropped: string[] = [];
    const queues = new ObservationQueues(
      { maxPending: 2, maxReconciling: 100 },
      new Logger('test'),
      (guildId) => dropped.push(guildId),
    );
    let settled = 0;
    const pending = { settle: () => (settled += 1) } as unknown as Pending;
    queues.pushLive([seen('1'), seen('2', 'g2'), seen('3', 'g3'), seen('4', 'g4')], pending);
    expect(queues.counts).toEqual({ live: 2, reconciling: 0 });
    expect(dropped).toEqual(['g3', 'g4']);
    expect(settled).toBe(2);
    expect(who(queues.take(10)?.batch)).toEqual(['1@g1', '2@g2']);
  });
});
