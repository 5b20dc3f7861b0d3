import { Inject, Injectable } from '@nestjs/common';
import {
  Client,
  DefaultRestOptions,
  GatewayIntentBits,
  type ClientOptions,
  type ResponseLike,
  type RESTOptions,
} from 'discord.js';
import { DETECTOR_SETTINGS, type DetectorSettings } from './detector.settings.js';

/**
 * Builds the gateway client: `Guilds` (the servers, with their members) and `GuildMembers`
 * (privileged: member updates and member requests). No presences, no partials. A new client
 * per connection: a destroyed discord.js client is not reused. REST goes to DISCORD_API_URL
 * when set (a REST proxy, or a test double), and so does the one call that names the gateway
 * (GET /gateway/bot): discord.js has no gateway option of its own, so DISCORD_GATEWAY_URL
 * replaces the address in that answer. A resume goes where the gateway's READY said.
 */
@Injectable()
export class DiscordClientFactory {
  constructor(@Inject(DETECTOR_SETTINGS) private readonly settings: DetectorSettings) {}

  create(): Client {
    const rest: Partial<RESTOptions> = {};
    if (this.settings.apiUrl) rest.api = this.settings.apiUrl;
    if (this.settings.gatewayUrl) {
      rest.makeRequest = withGatewayUrl(DefaultRestOptions.makeRequest, this.settings.gatewayUrl);
    }
    const options: ClientOptions = {
      intents: [GatewayIntentBits.Guilds, GatewayIntentBits.GuildMembers],
      partials: [],
      // One process runs every shard Discord recommends.
      shards: 'auto',
      rest,
    };
    return new Client(options);
  }
}

/** `makeRequest` answering GET /gateway/bot with `gatewayUrl` as the gateway's address. */
export function withGatewayUrl(
  makeRequest: RESTOptions['makeRequest'],
  gatewayUrl: string,
): RESTOptions['makeRequest'] {
  return async (url, init) => {
    const response = await makeRequest(url, init);
    if (!response.ok || !new URL(url).pathname.endsWith('/gateway/bot')) return response;
    const body: unknown = await response.json();
    return jsonResponse({ ...(body as object), url: gatewayUrl }, response);
  };
}

function jsonResponse(body: unknown, like: ResponseLike): ResponseLike {
  const headers = new Headers(like.headers);
  headers.set('content-type', 'application/json');
  headers.delete('content-length');
  headers.delete('content-encoding');
  return new Response(JSON.stringify(body), {
    status: like.status,
    statusText: like.statusText,
    headers,
  });
}
