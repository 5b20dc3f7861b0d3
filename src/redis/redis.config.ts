import { IsBoolean, IsOptional, IsString, Matches } from 'class-validator';
import { defineConfig, Variable } from '../config/config-section.js';
import { HOST_PORT_LIST, parseHostPorts, ToBoolean } from '../config/transforms.js';

export class RedisVariables {
  @Variable(
    '`redis://…` (or `rediss://`, with an ACL user and password); required for several instances',
    {
      default: 'unset: in-process bus (one instance only)',
      secret: true,
    },
  )
  @IsOptional()
  @Matches(/^rediss?:\/\/.+/, { message: 'must be a redis:// or rediss:// URL' })
  REDIS_URL?: string;

  @Variable('prefix of the Redis channel and keys')
  @IsOptional()
  @Matches(/^[A-Za-z0-9:_.-]{1,64}$/, {
    message: 'must be 1-64 characters of letters, digits, ":", "_", "." or "-"',
  })
  REDIS_KEY_PREFIX: string = 'prevnames';

  @Variable('`host:port,…`: Redis through Sentinel instead of `REDIS_URL`', { default: 'unset' })
  @IsOptional()
  @Matches(HOST_PORT_LIST, { message: 'must be a comma-separated list of host:port' })
  REDIS_SENTINELS?: string;

  @Variable('the master name the sentinels monitor (with `REDIS_SENTINELS`)', { default: 'unset' })
  @IsOptional()
  @Matches(/^[A-Za-z0-9._-]{1,64}$/, {
    message: 'must be the name of the master the sentinels monitor',
  })
  REDIS_SENTINEL_MASTER?: string;

  @Variable("the sentinels' password", { default: 'unset', secret: true })
  @IsOptional()
  @IsString()
  REDIS_SENTINEL_PASSWORD?: string;

  @Variable('`host:port,…`: seed nodes of a Redis Cluster (7.0 or later) instead of `REDIS_URL`', {
    default: 'unset',
  })
  @IsOptional()
  @Matches(HOST_PORT_LIST, { message: 'must be a comma-separated list of host:port' })
  REDIS_CLUSTER_NODES?: string;

  @Variable("`true`: TLS to the cluster's nodes (with `REDIS_CLUSTER_NODES`)")
  @IsOptional()
  @ToBoolean()
  @IsBoolean({ message: 'must be true or false' })
  REDIS_CLUSTER_TLS: boolean = false;

  @Variable("with `REDIS_SENTINELS` or `REDIS_CLUSTER_NODES`: Redis's ACL user", {
    default: 'unset',
  })
  @IsOptional()
  @IsString()
  REDIS_USERNAME?: string;

  @Variable("with `REDIS_SENTINELS` or `REDIS_CLUSTER_NODES`: Redis's password", {
    default: 'unset',
    secret: true,
  })
  @IsOptional()
  @IsString()
  REDIS_PASSWORD?: string;
}

/** Where Redis is: one server, a Sentinel group or a cluster. Unset: no Redis (one instance). */
export const redisConfig = defineConfig({
  namespace: 'redis',
  description:
    'Where Redis is: one server, a Sentinel group or a cluster. Unset: no Redis (one instance).',
  variables: RedisVariables,
  build: (env) => ({
    url: env.REDIS_URL,
    sentinels: parseHostPorts(env.REDIS_SENTINELS),
    sentinelMaster: env.REDIS_SENTINEL_MASTER,
    sentinelPassword: env.REDIS_SENTINEL_PASSWORD,
    clusterNodes: parseHostPorts(env.REDIS_CLUSTER_NODES),
    clusterTls: env.REDIS_CLUSTER_TLS,
    username: env.REDIS_USERNAME,
    password: env.REDIS_PASSWORD,
    keyPrefix: env.REDIS_KEY_PREFIX,
  }),
  check: (env) => {
    if (env.REDIS_SENTINELS && env.REDIS_URL) return 'set REDIS_URL or REDIS_SENTINELS, not both';
    if (env.REDIS_CLUSTER_NODES && (env.REDIS_URL || env.REDIS_SENTINELS)) {
      return `set REDIS_CLUSTER_NODES or ${env.REDIS_URL ? 'REDIS_URL' : 'REDIS_SENTINELS'}, not both`;
    }
    if (Boolean(env.REDIS_SENTINELS) !== Boolean(env.REDIS_SENTINEL_MASTER)) {
      return 'REDIS_SENTINELS and REDIS_SENTINEL_MASTER go together';
    }
    return undefined;
  },
});
