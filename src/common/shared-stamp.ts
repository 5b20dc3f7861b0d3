/** The cell of `SharedStamp.cells` that is 1 while notifications are heard, 0 otherwise. */
export const LIVE_CELL = 0;

/**
 * A notification channel's stamp (PostgresNotifications) in memory shared between threads:
 * `stampOf` in a worker thread reads what `NotificationWatch.stamp()` gives at that moment.
 */
export interface SharedStamp {
  cells: Int32Array;
  index: number;
}

/** The stamp: changes with every notification on the channel; undefined while none is heard. */
export function stampOf({ cells, index }: SharedStamp): number | undefined {
  return Atomics.load(cells, LIVE_CELL) === 1 ? Atomics.load(cells, index) : undefined;
}
