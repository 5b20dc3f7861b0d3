import { Logger, Module } from '@nestjs/common';
import { Owns } from '../config/owns.decorator.js';
import { Leases, LocalLeases } from './leases.js';
import { RedisConnections } from './redis-connections.js';
import { RedisLeases } from './redis-leases.js';
import { redisConfig } from './redis.config.js';

/**
 * Redis, for every module that needs it: `RedisConnections.create(role)` is the only way a
 * connection is made, and all of them close together at shutdown. `Leases` is the one lease
 * implementation (in Redis, or in memory for a single instance without it), for whatever
 * must run on exactly one instance at a time; `LeaseCompetition` competes for one.
 */
@Owns({ config: [redisConfig] })
@Module({
  providers: [
    RedisConnections,
    {
      provide: Leases,
      inject: [RedisConnections],
      useFactory: (redis: RedisConnections): Leases => {
        const leases = redis.enabled
          ? new RedisLeases(() => redis.create('leases'), redis.keyPrefix)
          : new LocalLeases();
        new Logger('Leases').log(`Leases: ${leases.description}`);
        return leases;
      },
    },
  ],
  exports: [RedisConnections, Leases],
})
export class RedisModule {}
