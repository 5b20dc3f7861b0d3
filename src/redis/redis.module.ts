import { Module } from '@nestjs/common';
import { RedisConnections } from './redis-connections.js';

/**
 * Redis, for every module that needs it: `RedisConnections.create(role)` is the only way a
 * connection is made, and all of them close together at shutdown.
 */
@Module({
  providers: [RedisConnections],
  exports: [RedisConnections],
})
export class RedisModule {}
