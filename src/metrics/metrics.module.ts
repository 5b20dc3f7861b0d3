import { Global, Module } from '@nestjs/common';
import { Owns } from '../config/owns.decorator.js';
import { MetricsController } from './metrics.controller.js';
import { MetricsService } from './metrics.service.js';

/** Prometheus metrics at /api/metrics; every module may record into MetricsService. */
@Owns({ apiTags: [{ name: 'operations', description: 'Metrics' }] })
@Global()
@Module({
  controllers: [MetricsController],
  providers: [MetricsService],
  exports: [MetricsService],
})
export class MetricsModule {}
