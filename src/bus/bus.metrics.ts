import { Injectable } from '@nestjs/common';
import { ModuleMetrics } from '../metrics/index.js';

/** How long the bus takes. */
@Injectable()
export class BusMetrics extends ModuleMetrics {
  readonly publishToDelivery = this.histogram({
    name: 'name_history_publish_to_delivery_seconds',
    help: 'Time from the start of a publish (any instance) to its delivery to this instance by Redis',
    buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1],
  });
}
