import { Module } from '@nestjs/common';
import { Owns } from '../config/owns.decorator.js';
import { adminConfig } from './admin.config.js';
import { AdminTokenGuard } from './admin-token.guard.js';

/**
 * The administration's token (ADMIN_TOKEN): its guard, for the routes of every module that
 * has administration routes (privacy, webhook endpoints), which also hides those routes
 * while the token is unset.
 */
@Owns({ config: [adminConfig] })
@Module({
  providers: [AdminTokenGuard],
  exports: [AdminTokenGuard],
})
export class AdminModule {}
