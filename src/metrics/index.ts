/** What the metrics folder offers the others: nothing else of it is theirs to import. */
export { MetricsService, ModuleMetrics } from './metrics.service.js';
