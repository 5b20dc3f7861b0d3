import { Injectable } from '@nestjs/common';
import { ModuleMetrics } from '../metrics/index.js';

/** The stream's listeners. */
@Injectable()
export class EventsMetrics extends ModuleMetrics {
  readonly listeners = this.gauge({
    name: 'name_history_sse_listeners',
    help: 'SSE listeners connected to this instance',
  });

  readonly slowListenersCut = this.counter({
    name: 'name_history_slow_listeners_disconnected_total',
    help: 'Listeners disconnected because they stopped reading',
  });
}
