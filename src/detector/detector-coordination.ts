import { RedisConnections } from '../redis/redis-connections.js';
import {
  LocalDetectorInstances,
  RedisDetectorInstances,
  type DetectorInstances,
} from './detector-instances.js';
import type { DetectorSettings } from './detector.settings.js';
import { MemorySessionStore } from './discord-gateway.js';
import { LocalIdentifyGate, type IdentifyGate } from './identify-gate.js';
import { RedisIdentifyGate } from './redis-identify-gate.js';
import type { SessionStore } from './shard-connection.js';

/** The injection token of the detector's DetectorCoordination. */
export const DETECTOR_COORDINATION = 'DETECTOR_COORDINATION';

/**
 * What the detector's instances share: who is live, the identify limits, the shards'
 * sessions. In Redis (one connection, keys under the hash tag `{<prefix>:detector}`, so a
 * script may touch several on a Redis Cluster), or in memory for a single instance.
 */
export interface DetectorCoordination {
  instances: DetectorInstances;
  identify: IdentifyGate;
  sessions: SessionStore;
}

export function detectorCoordination(
  redis: RedisConnections,
  settings: DetectorSettings,
): DetectorCoordination {
  // No Redis connection unless the detector runs here.
  if (!redis.enabled || !settings.token || !settings.enabled) {
    return {
      instances: new LocalDetectorInstances(),
      identify: new LocalIdentifyGate(),
      sessions: new MemorySessionStore(),
    };
  }
  const connection = redis.create('detector');
  const keyBase = `{${redis.keyPrefix}:detector}`;
  return {
    instances: new RedisDetectorInstances(connection, `${keyBase}:instances`),
    identify: new RedisIdentifyGate(connection, keyBase),
    sessions: new MemorySessionStore(),
  };
}
