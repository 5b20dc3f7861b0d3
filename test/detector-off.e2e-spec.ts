/** The detector without DISCORD_TOKEN: off, and it asks nothing of anyone. */
import { uniqueRedisPrefix, useApp } from './support/app.js';
import { FakeDiscord } from './support/fake-discord.js';
import { waitFor } from './support/ports.js';
import { ThrowawayRedis } from './support/redis-server.js';

describe('the detector without a token', () => {
  let server: ThrowawayRedis;
  let discord: FakeDiscord;
  const prefix = uniqueRedisPrefix();

  beforeAll(async () => {
    server = await ThrowawayRedis.start();
    discord = await FakeDiscord.start({ guilds: [] });
  });

  useApp({
    env: () => ({
      REDIS_URL: server.url,
      REDIS_KEY_PREFIX: prefix,
      DISCORD_TOKEN: '',
      DISCORD_API_URL: discord.apiUrl,
    }),
  });

  afterAll(async () => {
    await discord.close();
    await server.kill();
  });

  it('never calls Discord and takes no lease', async () => {
    // Connections open while the app starts, before this test's own, which Redis therefore
    // lists after them: the app's connections, once each has its name, are all there is. The
    // leases' is the event log's consumers' (webhooks), not the detector's: no key of the
    // detector's is ever written.
    const names = await waitFor('every connection of the app named', async () => {
      const clients = (await server.command('CLIENT', 'LIST'))
        .split('\n')
        .filter((line) => line.startsWith('id=') && !line.includes(' cmd=client|list '));
      const names = clients.map((line) => /\bname=(\S*)/.exec(line)?.[1] ?? '');
      return names.every((name) => name !== '') && names.sort();
    });
    expect(names).toEqual(['leases', 'publisher', 'subscriber']);
    expect(discord.rest).toEqual([]);
    expect(discord.connections).toEqual([]);
    expect(await server.command('KEYS', `*detector*`)).toBe('*0');
  });
});
