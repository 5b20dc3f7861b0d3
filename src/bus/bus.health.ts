import { Injectable } from '@nestjs/common';
import { HealthIndicatorService } from '@nestjs/terminus';
import { withTimeout } from '../common/with-timeout.js';
import { NameEventBus } from './name-event-bus.js';

const PING_TIMEOUT_MS = 2_000;

/** Up when Redis answers. Only part of readiness when Redis is configured. */
@Injectable()
export class BusHealthIndicator {
  constructor(
    private readonly bus: NameEventBus,
    private readonly health: HealthIndicatorService,
  ) {}

  get enabled(): boolean {
    return this.bus.kind === 'redis';
  }

  async check() {
    const indicator = this.health.check('redis');
    try {
      await withTimeout(this.bus.ping(), PING_TIMEOUT_MS);
      return indicator.up();
    } catch (error) {
      return indicator.down({ message: (error as Error).message });
    }
  }
}
