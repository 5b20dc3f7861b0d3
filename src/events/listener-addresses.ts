import type { Request } from 'express';
import ipaddr from 'ipaddr.js';

/**
 * Listeners per client address on this instance (SSE_MAX_LISTENERS_PER_ADDRESS). The address is
 * the client's as `trust proxy` makes it; an IPv6 one counts by its /64, which one subscriber
 * line is usually given whole, and an IPv4-mapped one as the IPv4 address.
 */
export class ListenerAddresses {
  private readonly counts = new Map<string, number>();

  constructor(private readonly limit: number) {}

  /** Counts a listener of `req`'s address: its release, or undefined when the address is full. */
  take(req: Request): (() => void) | undefined {
    const address = addressOf(req);
    const count = this.counts.get(address) ?? 0;
    if (count >= this.limit) return undefined;
    this.counts.set(address, count + 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const left = (this.counts.get(address) ?? 1) - 1;
      if (left > 0) this.counts.set(address, left);
      else this.counts.delete(address);
    };
  }
}

function addressOf(req: Request): string {
  const ip = req.ip ?? req.socket.remoteAddress;
  if (!ip || !ipaddr.isValid(ip)) return 'unknown';
  const parsed = ipaddr.process(ip);
  if (parsed.kind() === 'ipv4') return parsed.toString();
  const prefix = (parsed as ipaddr.IPv6).parts.slice(0, 4);
  return `${prefix.map((part) => part.toString(16)).join(':')}::/64`;
}
