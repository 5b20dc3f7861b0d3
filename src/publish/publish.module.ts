import { Module } from '@nestjs/common';
import { BusModule } from '../bus/bus.module.js';
import { HistoryModule } from '../history/history.module.js';
import { RateLimitModule } from '../rate-limit/rate-limit.module.js';
import { PublishController } from './publish.controller.js';
import { PublishService } from './publish.service.js';

/** POST /webhooks/prevnames, and the publish path the detector shares (PublishService). */
@Module({
  imports: [BusModule, HistoryModule, RateLimitModule],
  controllers: [PublishController],
  providers: [PublishService],
  exports: [PublishService],
})
export class PublishModule {}
