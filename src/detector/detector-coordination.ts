import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import { RedisConnections } from '../redis/index.js';
import {
  LocalDetectorInstances,
  RedisDetectorInstances,
  type DetectorInstances,
} from './detector-instances.js';
import type { DetectorSettings } from './detector.settings.js';
import { MemorySessionStore } from './discord-gateway.js';
import { LocalIdentifyGate, type IdentifyGate } from './identify-gate.js';
import { RedisIdentifyGate } from './redis-identify-gate.js';
import { RedisSessionStore } from './redis-session-store.js';
import type { SessionStore } from './shard-connection.js';

/** The injection token of the detector's DetectorCoordination. */
export const DETECTOR_COORDINATION = 'DETECTOR_COORDINATION';

/**
 * What the detector's instances share: who is live, the identify limits, the shards'
 * sessions. In Redis (one connection, keys under the hash tag `{<prefix>:detector}`, so a
 * script may touch several on a Redis Cluster), or in memory for a single instance.
 */
export interface DetectorCoordination {
  /** This instance in the detector's keys. */
  token: string;
  instances: DetectorInstances;
  identify: IdentifyGate;
  sessions: SessionStore;
}

export function detectorCoordination(
  redis: RedisConnections,
  settings: DetectorSettings,
): DetectorCoordination {
  const token = `${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`;
  // No Redis connection unless the detector runs here.
  if (!redis.enabled || !settings.token || !settings.enabled) {
    return {
      token,
      instances: new LocalDetectorInstances(),
      identify: new LocalIdentifyGate(),
      sessions: new MemorySessionStore(),
    };
  }
  const connection = redis.create('detector');
  const keyBase = `{${redis.keyPrefix}:detector}`;
  return {
    token,
    instances: new RedisDetectorInstances(connection, `${keyBase}:instances`),
    identify: new RedisIdentifyGate(connection, keyBase),
    sessions: new RedisSessionStore(connection, keyBase, token),
  };
}
