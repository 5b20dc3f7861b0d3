/** What the redis folder offers the others: nothing else of it is theirs to import. */
export { LeaseCompetition } from './lease-competition.js';
export { Leases } from './leases.js';
export type { Lease } from './leases.js';
export { RedisConnections } from './redis-connections.js';
export type { RedisClient } from './redis-connections.js';
export { RedisModule } from './redis.module.js';
