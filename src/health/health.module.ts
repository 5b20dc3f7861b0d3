import { Module } from '@nestjs/common';
import { TerminusModule } from '@nestjs/terminus';
import { BusModule } from '../bus/bus.module.js';
import { DatabaseModule } from '../database/database.module.js';
import { HealthController } from './health.controller.js';

/** Liveness and readiness probes for orchestrators and load balancers. */
@Module({
  imports: [TerminusModule.forRoot({ logger: false }), DatabaseModule, BusModule],
  controllers: [HealthController],
})
export class HealthModule {}
