/** The detector on the embedded defaults, reaching a gateway other than the one REST names. */
import { describe, expect, it } from '@jest/globals';
import { ALICE, twoServers, useDetectorApp } from './support/detector-app.js';
import { detectorFigures } from './support/detector-metrics.js';
import { waitFor } from './support/ports.js';

describe('the detector on the embedded defaults (PGlite, no Redis) behind a gateway address of its own', () => {
  // GET /gateway/bot names an address nothing listens on: DISCORD_GATEWAY_URL wins over it.
  const { fx, discord } = useDetectorApp(
    { guilds: twoServers(), advertisedGatewayUrl: 'ws://127.0.0.1:9' },
    {
      backend: 'embedded',
      env: () => ({
        DISCORD_API_URL: `${discord.apiUrl}/`,
        DISCORD_GATEWAY_URL: discord.gatewayUrl,
      }),
    },
  );

  it('connects, reconciles and records what it detects', async () => {
    expect(await detectorFigures(fx.url)).toMatchObject({ reconciliations: 2 });
    expect(discord.identifies).toHaveLength(1);
    discord.changeUser(ALICE.id, { global_name: 'Alice B.' });
    await waitFor(
      'the change in the history',
      async () => (await fx.history(ALICE.id)).body.prevnames.length > 0,
    );
    expect((await fx.history(ALICE.id)).body).toEqual({
      userId: ALICE.id,
      prevnames: [{ type: 'displayname', name: 'Alice A.', changedAt: expect.any(String) }],
      code: 200,
    });
  });
});
