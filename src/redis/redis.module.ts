import { Module } from '@nestjs/common';
import { Owns } from '../config/owns.decorator.js';
import { redisConfig } from './redis.config.js';
import { RedisConnections } from './redis-connections.js';

/**
 * Redis, for every module that needs it: `RedisConnections.create(role)` is the only way a
 * connection is made, and all of them close together at shutdown.
 */
@Owns({ config: [redisConfig] })
@Module({
  providers: [RedisConnections],
  exports: [RedisConnections],
})
export class RedisModule {}
