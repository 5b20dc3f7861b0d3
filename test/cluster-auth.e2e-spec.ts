import { BUS_DOWN, PUBLISH, PUBLISHED } from './support/api.js';
import { uniqueRedisPrefix, useApp } from './support/app.js';
import { nameEvent, streamed } from './support/events.js';
import { post } from './support/http.js';
import { RedisCluster } from './support/redis-cluster.js';

/**
 * A cluster that needs an ACL user: REDIS_USERNAME / REDIS_PASSWORD reach every connection
 * (the cluster client's and the bus's own subscriber). The default user of these nodes may
 * do anything but sharded pub/sub, so only an instance that logs in can publish and listen.
 */
describe('a Redis Cluster with an ACL user', () => {
  let cluster: RedisCluster | undefined;
  const prefix = uniqueRedisPrefix();
  const fx = useApp({
    backend: 'postgres',
    env: async () => {
      cluster = await RedisCluster.start({
        args: [
          ...['--user', 'default', 'on', 'nopass', '~*', '&*', '+@all', '-spublish', '-ssubscribe'],
          ...['--user', 'service', 'on', '>a-long-password', '~*', '&*', '+@all'],
        ],
      });
      return {
        REDIS_CLUSTER_NODES: cluster.seeds,
        REDIS_KEY_PREFIX: prefix,
        REDIS_USERNAME: 'service',
        REDIS_PASSWORD: 'a-long-password',
      };
    },
  });

  afterAll(async () => {
    await cluster?.stop();
  });

  it('publishes and listens as that user', async () => {
    const stream = await fx.listen();
    expect(stream.status).toBe(200);
    const body = nameEvent();
    const res = await fx.publish(body);
    expect([res.status, res.body]).toEqual([200, PUBLISHED]);
    await stream.untilEvents(1);
    expect(stream.events.map((e) => e.data)).toEqual([streamed(body)]);
  });

  it('cannot without the credentials: the bus-unavailable 500', async () => {
    const anonymous = await fx.startInstance({ REDIS_USERNAME: '', REDIS_PASSWORD: '' });
    const stream = await fx.listen();
    expect(stream.status).toBe(200);
    const res = await post(`${anonymous.url}${PUBLISH}`, nameEvent());
    expect([res.status, res.body]).toEqual([500, BUS_DOWN]);
  });
});
