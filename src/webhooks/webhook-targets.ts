import { BadRequestException } from '@nestjs/common';
import { BlockList, isIP } from 'node:net';
import { lookup as dnsLookup } from 'node:dns/promises';
import { withTimeout } from '../common/with-timeout.js';

/** What a target's host name resolves to, as `dns.lookup` with `all: true` gives it. */
export interface ResolvedAddress {
  address: string;
  family: 4 | 6;
}
export type Resolve = (host: string) => Promise<ResolvedAddress[]>;

/** A target refused: a 400 at registration, whose message names the field. */
export class TargetRefusedError extends BadRequestException {}

export const PRIVATE_TARGET_MESSAGE =
  'url must not point at a loopback, private, link-local, unique-local or unspecified address';
export const UNRESOLVABLE_TARGET_MESSAGE = 'url host name does not resolve';

/** A name that takes longer than this to resolve is taken as not resolving. */
const RESOLVE_TIMEOUT_MS = 5_000;

/**
 * Addresses that are not a public unicast host: loopback, private (RFC 1918, and the shared
 * 100.64/10), link-local, unique-local, unspecified ("this network"), multicast and reserved.
 * IPv4-mapped IPv6 (`::ffff:127.0.0.1`) is checked against the IPv4 rules by BlockList
 * itself; IPv4 embedded in NAT64 (64:ff9b::/96) and IPv4-compatible (::/96) addresses are
 * listed here.
 */
const IPV4_NOT_PUBLIC: [string, number][] = [
  ['0.0.0.0', 8],
  ['10.0.0.0', 8],
  ['100.64.0.0', 10],
  ['127.0.0.0', 8],
  ['169.254.0.0', 16],
  ['172.16.0.0', 12],
  ['192.168.0.0', 16],
  ['224.0.0.0', 4],
  ['240.0.0.0', 4],
];
const NOT_PUBLIC = new BlockList();
for (const [network, prefix] of IPV4_NOT_PUBLIC) {
  NOT_PUBLIC.addSubnet(network, prefix, 'ipv4');
  NOT_PUBLIC.addSubnet(`64:ff9b::${network}`, 96 + prefix, 'ipv6');
  NOT_PUBLIC.addSubnet(`::${network}`, 96 + prefix, 'ipv6');
}
// `::` and `::1` are among the IPv4-compatible addresses of 0.0.0.0/8 (`::0.0.0.0/104`).
NOT_PUBLIC.addSubnet('fc00::', 7, 'ipv6');
NOT_PUBLIC.addSubnet('fe80::', 10, 'ipv6');
NOT_PUBLIC.addSubnet('ff00::', 8, 'ipv6');

/** Whether `address` (an IP literal) is a public unicast address. */
export function isPublicAddress(address: string): boolean {
  const family = isIP(address);
  if (family === 0) return false;
  return !NOT_PUBLIC.check(address, family === 4 ? 'ipv4' : 'ipv6');
}

/** Whether `value` is an absolute http: or https: URL with a host. */
export function isHttpUrl(value: unknown): boolean {
  if (typeof value !== 'string') return false;
  const url = URL.parse(value);
  return url !== null && (url.protocol === 'http:' || url.protocol === 'https:') && !!url.hostname;
}

/**
 * The addresses a target may be reached at, checked: its IP literal, or every address its
 * name resolves to, all public (or, with `allowPrivate`, any). Throws TargetRefusedError
 * when one is not, or when the name does not resolve. Called at registration and again
 * before each delivery, whose connection then goes to one of these addresses and no other
 * (a name that changes between the check and the connection cannot redirect it).
 */
export async function vetTarget(
  url: URL,
  allowPrivate: boolean,
  resolve: Resolve = async (host) => (await dnsLookup(host, { all: true })) as ResolvedAddress[],
): Promise<ResolvedAddress[]> {
  // The host as an address or a name: without the brackets of an IPv6 literal.
  const host = url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname;
  const family = isIP(host);
  const addresses =
    family !== 0
      ? [{ address: host, family: family as 4 | 6 }]
      : await withTimeout(resolve(host), RESOLVE_TIMEOUT_MS).catch(() => []);
  if (addresses.length === 0) throw new TargetRefusedError(UNRESOLVABLE_TARGET_MESSAGE);
  if (!allowPrivate && !addresses.every(({ address }) => isPublicAddress(address))) {
    throw new TargetRefusedError(PRIVATE_TARGET_MESSAGE);
  }
  return addresses;
}
