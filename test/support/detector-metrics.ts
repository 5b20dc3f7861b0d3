import { http } from './http.js';
import { sample } from './metrics.js';
import { waitFor } from './ports.js';

/** The detector's figures in an instance's `/api/metrics`: what it compared and found. */
export interface DetectorFigures {
  /** Full views of a server compared to the last member. */
  reconciliations: number;
  /** Members compared in full views. */
  reconciledMembers: number;
  /** Changes found by reconciliation. */
  reconciledChanges: number;
  /** Changes found in live updates. */
  liveChanges: number;
  /** The time the reconciliations took, in all (ms). */
  reconcileMs: number;
  /** Batches of observations that failed, to be retried. */
  publishFailures: number;
  /** Observations waiting or under way. */
  backlog: { live: number; reconcile: number };
}

export async function detectorFigures(baseUrl: string): Promise<DetectorFigures> {
  const text = (await http<string>(`${baseUrl}/api/metrics`)).text;
  const of = (series: string) => sample(text, `name_history_detector_${series}`);
  return {
    reconciliations: of('reconciliations_total'),
    reconciledMembers: of('members_compared_total{source="reconciliation"}'),
    reconciledChanges: of('changes_total{source="reconciliation"}'),
    liveChanges: of('changes_total{source="live"}'),
    reconcileMs: of('reconciliation_duration_seconds_sum') * 1000,
    publishFailures: of('publish_failures_total'),
    backlog: { live: of('backlog{queue="live"}'), reconcile: of('backlog{queue="reconcile"}') },
  };
}

/**
 * Waits until the instance at `baseUrl` has finished `count` reconciliations since it
 * started (or since `before`); returns the figures since `before` then.
 */
export async function reconciled(
  baseUrl: string,
  count: number,
  { before, timeoutMs = 30_000 }: { before?: DetectorFigures; timeoutMs?: number } = {},
): Promise<DetectorFigures> {
  return waitFor(
    `${count} reconciliation(s) in ${baseUrl}/api/metrics`,
    async () => {
      const figures = since(before, await detectorFigures(baseUrl));
      return figures.reconciliations >= count && figures;
    },
    { timeoutMs, intervalMs: 50 },
  );
}

/** The counts of `after` less those of `before` (the backlog as it is in `after`). */
export function since(before: DetectorFigures | undefined, after: DetectorFigures) {
  if (!before) return after;
  return {
    reconciliations: after.reconciliations - before.reconciliations,
    reconciledMembers: after.reconciledMembers - before.reconciledMembers,
    reconciledChanges: after.reconciledChanges - before.reconciledChanges,
    liveChanges: after.liveChanges - before.liveChanges,
    reconcileMs: after.reconcileMs - before.reconcileMs,
    publishFailures: after.publishFailures - before.publishFailures,
    backlog: after.backlog,
  };
}
