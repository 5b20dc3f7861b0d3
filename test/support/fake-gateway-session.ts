import type { GatewayOpcodes } from 'discord.js';
import { WebSocket, type RawData } from 'ws';

/** What the fake gateway keeps of a client's connections and sessions, for tests to read. */

/** Discord's gateway limit: payloads a connection may send per minute. */
export const GATEWAY_SEND_LIMIT = 120;
const SEND_WINDOW_MS = 60_000;

/** One WebSocket connection of a client. */
export class GatewayConnection {
  readonly openedAt = Date.now();
  /** Every payload the client sent, with when it arrived. */
  readonly received: { op: number; d: unknown; at: number }[] = [];
  /** IDENTIFY or RESUME, once sent. */
  opened?: 'identify' | 'resume';
  shardId?: number;
  session?: Session;
  hello = false;
  closeCode?: number;
  /** When the server saw it closed. */
  closedAt?: number;
  /** When its IDENTIFY or RESUME arrived. */
  authenticatedAt?: number;
  heartbeatAcks = 0;

  constructor(
    readonly ws: WebSocket,
    readonly url: string,
  ) {}

  get open(): boolean {
    return this.ws.readyState === WebSocket.OPEN;
  }

  send(payload: unknown): void {
    if (this.open) this.ws.send(JSON.stringify(payload));
  }

  /** Records a payload the client sent; returns how many it sent within the last minute. */
  record(payload: { op: number; d: unknown }): number {
    const at = Date.now();
    this.received.push({ op: payload.op, d: payload.d, at });
    return this.received.filter((r) => r.at > at - SEND_WINDOW_MS).length;
  }
}

/** A gateway session: its sequence and every dispatch it carried, for replay. */
export class Session {
  seq = 0;
  readonly sent: { op: 0; t: string; s: number; d: unknown }[] = [];
  connection?: GatewayConnection;
  /** A RESUME of it is answered with INVALID_SESSION (false). */
  invalid = false;
  resumes = 0;
  /** The IDENTIFY's `large_threshold` (Discord's default 50). */
  largeThreshold = 50;

  constructor(
    readonly id: string,
    readonly shardId: number,
  ) {}

  /** `connection` carries the session from now on. */
  attach(connection: GatewayConnection): void {
    connection.shardId = this.shardId;
    connection.session = this;
    this.connection = connection;
  }
}

/** A client's payload, or undefined when it is not JSON. */
export function decode(data: RawData): { op: GatewayOpcodes; d: unknown } | undefined {
  try {
    // ws hands over a message as one Buffer, or its fragments when it came in several.
    const text = Array.isArray(data)
      ? Buffer.concat(data).toString()
      : Buffer.isBuffer(data)
        ? data.toString()
        : Buffer.from(data).toString();
    return JSON.parse(text) as { op: GatewayOpcodes; d: unknown };
  } catch {
    return undefined;
  }
}

export interface IdentifyData {
  token: string;
  intents: number;
  shard?: [number, number];
  large_threshold?: number;
}

export interface ResumeData {
  token: string;
  session_id: string;
  seq: number;
}
