// A small fake Discord for the detector scenario: GET /gateway/bot and a gateway speaking
// the public protocol (v10, JSON): HELLO, heartbeat ACKs, IDENTIFY → READY and a
// GUILD_CREATE per server carrying only the bot (a large server), REQUEST_GUILD_MEMBERS →
// the members in chunks of 1,000 (one per event-loop turn, as over a network), and
// GUILD_MEMBER_UPDATEs on demand. The tests' fuller fake is in test/support (TypeScript).
import { once } from 'node:events';
import http from 'node:http';
import { setImmediate } from 'node:timers';
import { WebSocketServer } from 'ws';

export const BENCH_DISCORD_TOKEN = 'bench-token.for-the-fake-discord-gateway';
const BOT = {
  id: '900000000000000001',
  username: 'bench-bot',
  discriminator: '0',
  global_name: null,
  avatar: null,
  bot: true,
};
const CHUNK = 1_000;

/** `count` servers' members in all, `perServer` each; user ids from 1e15 on. */
export function world(members, perServer) {
  const guilds = [];
  for (let first = 0; first < members; first += perServer) {
    const size = Math.min(perServer, members - first);
    guilds.push({
      id: String(800_000_000_000_000_001n + BigInt(guilds.length)),
      first,
      size,
    });
  }
  return guilds;
}

function member(i, generation = 0) {
  const suffix = generation ? `-${generation}` : '';
  return {
    user: {
      id: String(1_000_000_000_000_000n + BigInt(i)),
      username: `user${i}${suffix}`,
      discriminator: '0',
      global_name: `User ${i}`,
      avatar: null,
    },
    nick: `Nick ${i}`,
    roles: [],
    joined_at: '2024-01-01T00:00:00.000+00:00',
    deaf: false,
    mute: false,
    flags: 0,
  };
}

export class BenchDiscord {
  constructor(guilds) {
    this.guilds = guilds;
    this.sockets = new Set();
    this.seq = 0;
    this.server = http.createServer((req, res) => this.rest(req, res));
    this.wss = new WebSocketServer({ server: this.server });
    this.wss.on('connection', (ws) => this.accept(ws));
  }

  static async start(guilds) {
    const discord = new BenchDiscord(guilds);
    discord.server.listen(0, '127.0.0.1');
    await once(discord.server, 'listening');
    return discord;
  }

  get apiUrl() {
    return `http://127.0.0.1:${this.server.address().port}/api`;
  }

  rest(req, res) {
    req.resume();
    res.writeHead(200, { 'Content-Type': 'application/json' });
    res.end(
      JSON.stringify({
        url: `ws://127.0.0.1:${this.server.address().port}`,
        shards: 1,
        session_start_limit: {
          total: 1000,
          remaining: 1000,
          reset_after: 86_400_000,
          max_concurrency: 1,
        },
      }),
    );
  }

  accept(ws) {
    this.sockets.add(ws);
    ws.on('close', () => this.sockets.delete(ws));
    ws.on('error', () => undefined);
    ws.send(JSON.stringify({ op: 10, d: { heartbeat_interval: 41_250 } }));
    ws.on('message', (data) => {
      const { op, d } = JSON.parse(data.toString());
      if (op === 1) ws.send(JSON.stringify({ op: 11 }));
      else if (op === 2) this.identify(ws);
      else if (op === 8) void this.chunks(ws, d.guild_id, d.nonce);
    });
  }

  dispatch(ws, t, d) {
    ws.send(JSON.stringify({ op: 0, t, s: ++this.seq, d }));
  }

  identify(ws) {
    this.dispatch(ws, 'READY', {
      v: 10,
      user: BOT,
      guilds: this.guilds.map((g) => ({ id: g.id, unavailable: true })),
      session_id: 'bench-session',
      resume_gateway_url: `ws://127.0.0.1:${this.server.address().port}`,
      shard: [0, 1],
      application: { id: BOT.id, flags: 0 },
    });
    for (const g of this.guilds) {
      this.dispatch(ws, 'GUILD_CREATE', {
        id: g.id,
        name: `server ${g.id}`,
        large: true,
        unavailable: false,
        member_count: g.size + 1,
        members: [{ user: BOT, nick: null, roles: [], joined_at: '2024-01-01T00:00:00.000+00:00' }],
        roles: [],
        channels: [],
        threads: [],
        presences: [],
        voice_states: [],
      });
    }
  }

  async chunks(ws, guildId, nonce) {
    const g = this.guilds.find((x) => x.id === guildId);
    const count = Math.ceil(g.size / CHUNK);
    for (let index = 0; index < count; index++) {
      await new Promise((resolve) => setImmediate(resolve));
      const members = [];
      for (let i = index * CHUNK; i < Math.min(g.size, (index + 1) * CHUNK); i++) {
        members.push(member(g.first + i));
      }
      this.dispatch(ws, 'GUILD_MEMBERS_CHUNK', {
        guild_id: guildId,
        members,
        chunk_index: index,
        chunk_count: count,
        not_found: [],
        nonce,
      });
    }
  }

  /** `count` username changes (members 0…count-1 of the first server), as live updates. */
  renames(count, generation) {
    const g = this.guilds[0];
    for (const ws of this.sockets) {
      for (let i = 0; i < count; i++) {
        this.dispatch(ws, 'GUILD_MEMBER_UPDATE', {
          guild_id: g.id,
          ...member(g.first + (i % g.size), generation),
        });
      }
    }
  }

  async close() {
    for (const ws of this.sockets) ws.terminate();
    await new Promise((resolve) => this.wss.close(resolve));
    await new Promise((resolve) => this.server.close(resolve));
  }
}
