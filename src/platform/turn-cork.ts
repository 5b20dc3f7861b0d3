import type { Socket } from 'node:net';

/**
 * Holds sockets' writes until the current turn of the event loop ends, then lets each go as
 * one write. Nest's `@Sse()` writes every message of a stream as its own chunk, each a tick
 * after the one before (a promise apart), and Node's HTTP response corks its socket for a tick
 * only: without this, events published in the same turn cost every listener a system call
 * each. Held with the socket's own `cork()`, so the bytes and their order are exactly Nest's;
 * released for every held socket by one `setImmediate`. See README.md in this folder.
 */
export class TurnCork {
  private readonly held = new Set<Socket>();

  /** Holds `socket`'s writes until this turn ends (once per socket and turn). */
  hold(socket: Socket): void {
    if (this.held.has(socket)) return;
    if (this.held.size === 0) setImmediate(() => this.release());
    this.held.add(socket);
    socket.cork();
  }

  private release(): void {
    for (const socket of this.held) socket.uncork();
    this.held.clear();
  }
}
