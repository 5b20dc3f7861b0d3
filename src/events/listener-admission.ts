import { HttpStatus, ServiceUnavailableException } from '@nestjs/common';
import type { Request } from 'express';
import ipaddr from 'ipaddr.js';
import { RetryLaterException } from '../common/http-exception.filter.js';

export const TOO_MANY_LISTENERS_MESSAGE = 'Too many listeners on this instance';
export const TOO_MANY_FROM_ADDRESS_MESSAGE = 'Too many listeners from this client address';
/** The Retry-After of the 429 past the per-address cap, in seconds. */
const ADDRESS_RETRY_AFTER_S = 10;

/**
 * The caps on listeners (connected, or being set up): per instance (SSE_MAX_LISTENERS), and
 * per client address on this instance (SSE_MAX_LISTENERS_PER_ADDRESS). The address is the
 * client's as `trust proxy` makes it; an IPv6 one counts by its /64, which one subscriber
 * line is usually given whole, and an IPv4-mapped one as the IPv4 address.
 */
export class ListenerAdmission {
  private readonly counts = new Map<string, number>();
  private admitted = 0;

  constructor(
    private readonly maxListeners: number,
    private readonly maxPerAddress: number,
  ) {}

  /** Listeners admitted and not released yet. */
  get count(): number {
    return this.admitted;
  }

  /**
   * Counts a listener of `req`: its release. Throws (before any byte is sent) a 503 when this
   * instance is full, a 429 when the client's address holds its share already.
   */
  admit(req: Request): () => void {
    if (this.admitted >= this.maxListeners) {
      throw new ServiceUnavailableException(TOO_MANY_LISTENERS_MESSAGE);
    }
    const address = addressOf(req);
    const count = this.counts.get(address) ?? 0;
    if (count >= this.maxPerAddress) {
      throw new RetryLaterException(
        TOO_MANY_FROM_ADDRESS_MESSAGE,
        HttpStatus.TOO_MANY_REQUESTS,
        ADDRESS_RETRY_AFTER_S,
      );
    }
    this.counts.set(address, count + 1);
    this.admitted++;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.admitted--;
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
