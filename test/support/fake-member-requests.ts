import { GatewayDispatchEvents, GatewayOpcodes } from 'discord.js';
import { memberChunks, type FakeGuild } from './fake-discord-world.js';

export interface MemberRequest {
  guildId: string;
  shardId: number;
  nonce?: string;
  at: number;
  answer: 'members' | 'rate-limited';
  /** When the answer (its last chunk) was dispatched. */
  answeredAt?: number;
  /** Asked again before the `retry_after` it had been given had passed. */
  breach: boolean;
}

/** Sends a dispatch on the session that asked. */
type Dispatch = (t: string, d: unknown) => void;

/**
 * The fake gateway's answers to REQUEST_GUILD_MEMBERS: the server's members in chunks of
 * 1,000 (GUILD_MEMBERS_CHUNK), or RATE_LIMITED when the server's list was given less than
 * `windowMs` ago. Asking again before the `retry_after` given has passed is a breach. Every
 * request is recorded, with its answer.
 */
export class MemberRequests {
  readonly requests: MemberRequest[] = [];
  private readonly lastAnswer = new Map<string, { at: number; retryUntil?: number }>();
  private gate?: { from: number; open: Promise<void> };

  constructor(
    private readonly windowMs: number,
    private readonly breaches: string[],
  ) {}

  /** Member chunks from index `from` on wait until the returned function is called. */
  hold(from: number): () => void {
    let release!: () => void;
    const open = new Promise<void>((resolve) => (release = resolve));
    this.gate = { from, open };
    return () => {
      this.gate = undefined;
      release();
    };
  }

  answer(guild: FakeGuild, shardId: number, nonce: string | undefined, dispatch: Dispatch): void {
    const at = Date.now();
    const last = this.lastAnswer.get(guild.id);
    const breach = last?.retryUntil !== undefined && at < last.retryUntil;
    if (breach) this.breaches.push(`server ${guild.id} asked for again before retry_after`);
    const waitMs = last ? last.at + this.windowMs - at : 0;
    const request: MemberRequest = {
      guildId: guild.id,
      shardId,
      nonce,
      at,
      answer: waitMs > 0 ? 'rate-limited' : 'members',
      breach,
    };
    this.requests.push(request);
    if (waitMs > 0) {
      last!.retryUntil = at + waitMs;
      dispatch(GatewayDispatchEvents.RateLimited, {
        opcode: GatewayOpcodes.RequestGuildMembers,
        retry_after: waitMs / 1000,
        meta: { guild_id: guild.id, nonce },
      });
      request.answeredAt = Date.now();
      return;
    }
    this.lastAnswer.set(guild.id, { at });
    void this.sendChunks(guild, nonce, dispatch).then(() => (request.answeredAt = Date.now()));
  }

  private async sendChunks(guild: FakeGuild, nonce: string | undefined, dispatch: Dispatch) {
    for (const chunk of memberChunks(guild, nonce)) {
      // As over a network: one chunk per turn of the event loop, not all in one burst.
      await new Promise((resolve) => setImmediate(resolve));
      const gate = this.gate;
      if (gate && chunk.chunk_index >= gate.from) await gate.open;
      dispatch(GatewayDispatchEvents.GuildMembersChunk, chunk);
    }
  }
}
