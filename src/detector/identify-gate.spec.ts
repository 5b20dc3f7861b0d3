import { afterEach, describe, expect, it, jest } from '@jest/globals';
import { Logger } from '@nestjs/common';
import { FakeDiscord, TEST_DISCORD_TOKEN } from '../../test/support/fake-discord.js';
import { DiscordGateway } from './discord-gateway.js';
import { LocalIdentifyGate, type Turn } from './identify-gate.js';

/** The local gate, whose store fails on its first `failures` turns (as Redis may). */
class FailingGate extends LocalIdentifyGate {
  constructor(private failures: number) {
    super();
  }
  protected override tryTurn(bucket: number): Promise<Turn> {
    if (this.failures-- > 0) return Promise.reject(new Error('Connection is closed.'));
    return super.tryTurn(bucket);
  }
}

async function until(condition: () => boolean, timeoutMs = 5_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`Condition not met within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

describe('IdentifyGate', () => {
  let discord: FakeDiscord | undefined;
  let gateway: DiscordGateway | undefined;

  afterEach(async () => {
    await gateway?.stopAll({ resumable: false });
    await discord?.close();
    jest.restoreAllMocks();
  });

  // A rejection reached @discordjs/ws, which reconnected and identified, then sent the first
  // IDENTIFY as well: the fake closed it (4005) and the shard identified a third time, two
  // counted ([0, 0, 1, 2, 3] in detector-cluster once).
  it('waits out a failing store: the shard identifies once, in its turn', async () => {
    const warnings: string[] = [];
    jest.spyOn(Logger.prototype, 'warn').mockImplementation((message: unknown) => {
      warnings.push(String(message));
    });
    discord = await FakeDiscord.start({ guilds: [] });
    gateway = new DiscordGateway(
      { token: TEST_DISCORD_TOKEN, apiUrl: discord.apiUrl, gatewayUrl: undefined, shardCount: 1 },
      { closed: () => {}, started: () => {}, warn: () => {} },
      new FailingGate(2),
    );
    await gateway.connectInfo();
    await gateway.startShard(0);
    await until(() => discord!.isLive(0));
    // Long enough for a second IDENTIFY, had the failure sent one.
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    expect(discord.identifies.map((c) => c.shardId)).toEqual([0]);
    expect(discord.breaches).toEqual([]);
    expect(warnings).toEqual([
      expect.stringMatching(/^Discord detector: could not take shard 0's identify turn/),
      expect.stringMatching(/^Discord detector: could not take shard 0's identify turn/),
    ]);
  });
});
