import { Module } from '@nestjs/common';
import { TerminusModule } from '@nestjs/terminus';
import { Owns } from '../config/owns.decorator.js';
import { BusModule } from '../bus/index.js';
import { DatabaseModule } from '../database/index.js';
import { HealthController } from './health.controller.js';
import { DependencyHealth } from './dependency-health.js';
import { HttpDrainService } from './http-drain.service.js';

/**
 * Liveness and readiness probes for orchestrators and load balancers, and the HTTP drain
 * that takes the instance out of service on SIGTERM (readiness then answers 503).
 */
@Owns({ apiTags: [{ name: 'health', description: 'Probes for orchestrators and load balancers' }] })
@Module({
  imports: [TerminusModule.forRoot({ logger: false }), DatabaseModule, BusModule],
  controllers: [HealthController],
  providers: [HttpDrainService, DependencyHealth],
  exports: [HttpDrainService],
})
export class HealthModule {}
