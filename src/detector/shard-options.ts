import { DefaultWebSocketManagerOptions, type FetchingStrategyOptions } from '@discordjs/ws';

/** The options of every shard of a login. */
export function shardOptions(
  token: string,
  intents: number,
  gatewayInformation: FetchingStrategyOptions['gatewayInformation'],
  shardCount: number,
): FetchingStrategyOptions {
  const {
    identifyProperties,
    version,
    encoding,
    handshakeTimeout,
    helloTimeout,
    readyTimeout,
    largeThreshold,
    initialPresence,
    compression,
  } = DefaultWebSocketManagerOptions;
  return {
    token,
    intents,
    gatewayInformation,
    shardCount,
    identifyProperties,
    version,
    encoding,
    handshakeTimeout,
    helloTimeout,
    readyTimeout,
    largeThreshold,
    initialPresence,
    compression,
  };
}
