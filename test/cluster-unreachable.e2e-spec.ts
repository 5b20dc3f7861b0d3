import { BUS_DOWN, HEALTH_READY, JSON_TYPE, STREAM_FAILED } from './support/api.js';
import { uniqueRedisPrefix, useApp } from './support/app.js';
import { nameEvent } from './support/events.js';
import { http } from './support/http.js';

/** REDIS_CLUSTER_NODES naming nodes that never answer: the service starts, and says so. */
describe('a Redis Cluster that cannot be reached', () => {
  const fx = useApp({
    backend: 'postgres',
    env: { REDIS_CLUSTER_NODES: '127.0.0.1:1,127.0.0.1:2', REDIS_KEY_PREFIX: uniqueRedisPrefix() },
  });

  it('answers readiness 503, naming Redis', async () => {
    const ready = await http(`${fx.url}${HEALTH_READY}`);
    expect([ready.status, ready.body]).toEqual([
      503,
      { message: 'Not ready: redis unavailable', code: 503 },
    ]);
  });

  it('answers a listen 500 with the contract body before any stream byte', async () => {
    const stream = await fx.listen();
    expect(stream.status).toBe(500);
    expect(stream.headers['content-type']).toBe(JSON_TYPE);
    expect(JSON.parse(await stream.body())).toEqual(STREAM_FAILED);
  });

  it('stores a POST, then answers the bus-unavailable 500', async () => {
    const body = nameEvent();
    const res = await fx.publish(body);
    expect([res.status, res.body]).toEqual([500, BUS_DOWN]);
    const rows = await fx.db.query('SELECT user_id FROM name_change_events WHERE user_id = $1', [
      body.userId,
    ]);
    expect(rows).toEqual([{ user_id: body.userId }]);
  });
});
