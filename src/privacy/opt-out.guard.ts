import { Injectable, type OnModuleInit } from '@nestjs/common';
import { RecordingGuardsService, type RecordingGuard } from '../name-events/index.js';
import { OptOutsRepository } from './opt-outs.repository.js';

/**
 * Users who opted out are not recorded: registered with the name-event domain, which asks
 * under the publish lock (a POST) or the user's partition lock (the detector's comparisons). An
 * opt-out is recorded under both locks (PrivacyService), so the answer holds until the asker
 * lets go of its lock.
 */
@Injectable()
export class OptOutRecordingGuard implements RecordingGuard, OnModuleInit {
  constructor(
    private readonly optOuts: OptOutsRepository,
    private readonly guards: RecordingGuardsService,
  ) {}

  onModuleInit(): void {
    this.guards.register(this);
  }

  refusedAmong(userIds: readonly string[]): Promise<Set<string>> {
    return this.optOuts.findAmong(userIds);
  }
}
