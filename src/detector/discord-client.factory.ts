import { Injectable } from '@nestjs/common';
import { Client, GatewayIntentBits } from 'discord.js';

/**
 * Builds the gateway client: `Guilds` (the servers and their members' cache) and
 * `GuildMembers` (privileged: member updates and member requests). No presences, no
 * partials: an update for a user or member that is not cached carries no previous value,
 * and discord.js then emits nothing for it. A new client per connection: a destroyed
 * discord.js client is not reused.
 */
@Injectable()
export class DiscordClientFactory {
  create(): Client {
    return new Client({
      intents: [GatewayIntentBits.Guilds, GatewayIntentBits.GuildMembers],
      partials: [],
      // One process runs every shard Discord recommends, so the caches are shared.
      shards: 'auto',
    });
  }
}
