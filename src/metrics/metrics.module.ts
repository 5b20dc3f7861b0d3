import { Global, Module } from '@nestjs/common';
import { Owns } from '../config/owns.decorator.js';
import { MetricsController } from './metrics.controller.js';
import { MetricsService } from './metrics.service.js';

/** /api/metrics: the registry that each module's `<feature>.metrics.ts` fills. */
@Owns({ apiTags: [{ name: 'operations', description: 'Metrics' }] })
@Global()
@Module({
  controllers: [MetricsController],
  providers: [MetricsService],
  exports: [MetricsService],
})
export class MetricsModule {}
