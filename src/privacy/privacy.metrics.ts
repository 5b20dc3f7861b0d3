import { Injectable } from '@nestjs/common';
import { ModuleMetrics } from '../metrics/index.js';

/** What erasure, opt-out and the retention job delete. */
@Injectable()
export class PrivacyMetrics extends ModuleMetrics {
  readonly eventsErased = this.counter({
    name: 'name_history_events_erased_total',
    help: "Stored events this instance deleted on request (a user's erasure or opt-out)",
    labelNames: ['reason'] as const,
  });

  readonly retentionDeleted = this.counter({
    name: 'name_history_retention_deleted_total',
    help: 'Stored events this instance deleted as older than RETENTION_DAYS',
  });

  readonly retentionRuns = this.counter({
    name: 'name_history_retention_runs_total',
    help: 'Retention runs due on this instance: completed, skipped (another instance runs it) or failed',
    labelNames: ['outcome'] as const,
  });
}
