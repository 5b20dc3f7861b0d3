import { Injectable } from '@nestjs/common';

/** Tells who must not be recorded (the privacy module's opt-outs, say). */
export interface RecordingGuard {
  /**
   * Of `userIds`, those who must not be recorded. Called under the publish lock (or the detect
   * lock), on its session: a guard whose state changes under the same lock (an opt-out) gives
   * an answer that holds until the lock is released.
   */
  refusedAmong(userIds: readonly string[]): Promise<Set<string>>;
}

/**
 * The guards every publish and every comparison of the detector consults: a module that
 * knows users who must not be recorded registers one (in `onModuleInit`), and the domain
 * refuses them without knowing why.
 */
@Injectable()
export class RecordingGuardsService {
  private readonly guards: RecordingGuard[] = [];

  register(guard: RecordingGuard): void {
    this.guards.push(guard);
  }

  /** Of `userIds`, those that any guard refuses. */
  async refusedAmong(userIds: readonly string[]): Promise<Set<string>> {
    const refused = new Set<string>();
    if (userIds.length === 0) return refused;
    const distinct = [...new Set(userIds)];
    for (const guard of this.guards) {
      for (const userId of await guard.refusedAmong(distinct)) refused.add(userId);
    }
    return refused;
  }
}
