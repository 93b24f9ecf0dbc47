import { lookup as dnsLookup } from 'node:dns/promises';
import { BlockList, isIP } from 'node:net';
import { badInput } from '../kernel/errors.js';

/**
 * SSRF guard for webhook URLs. A URL is checked when it is registered and again before every
 * delivery (DNS may change); the delivery then connects to exactly the address that was checked,
 * so a second, different DNS answer cannot slip a private address in between check and connect.
 */

const PRIVATE = new BlockList();
for (const [net, prefix] of [
  ['0.0.0.0', 8], // "this network"
  ['10.0.0.0', 8],
  ['100.64.0.0', 10], // carrier-grade NAT
  ['127.0.0.0', 8],
  ['169.254.0.0', 16], // link-local, incl. cloud metadata
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15], // benchmarking
  ['224.0.0.0', 4], // multicast
  ['240.0.0.0', 4], // reserved, broadcast
] as const) {
  PRIVATE.addSubnet(net, prefix, 'ipv4');
}
for (const [net, prefix] of [
  ['::', 128],
  ['::1', 128],
  ['fc00::', 7], // unique local, incl. fd00:ec2::254 (AWS metadata over IPv6)
  ['fe80::', 10], // link-local
  ['ff00::', 8], // multicast
] as const) {
  PRIVATE.addSubnet(net, prefix, 'ipv6');
}

/** Cloud metadata services: refused even when private addresses are allowed, since nothing legitimate lives there. */
const METADATA = new Set(['169.254.169.254', 'fd00:ec2::254', '100.100.100.200']);

export type AddressClass = 'public' | 'private' | 'metadata';

export function classifyAddress(address: string): AddressClass {
  let ip = address.toLowerCase();
  // IPv4-mapped IPv6 (::ffff:10.0.0.1) is the IPv4 address in disguise.
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/.exec(ip);
  if (mapped) ip = mapped[1]!;
  if (METADATA.has(ip)) return 'metadata';
  const family = isIP(ip);
  if (family === 0) return 'private';
  return PRIVATE.check(ip, family === 4 ? 'ipv4' : 'ipv6') ? 'private' : 'public';
}

export interface VettedTarget {
  url: URL;
  address: string;
  family: 4 | 6;
}

/** Looks a host up. DNS is the edge of the world: tests pass a resolver to play a hostile DNS server. */
export type Resolver = (hostname: string) => Promise<Array<{ address: string; family: number }>>;

const systemResolver: Resolver = (hostname) => dnsLookup(hostname, { all: true, verbatim: true });

/**
 * Parses and checks a webhook URL: http(s), no credentials, and every address the host resolves
 * to must be public (unless `allowPrivate`). Throws BAD_USER_INPUT naming `field`.
 */
export async function vetWebhookUrl(
  raw: string,
  allowPrivate: boolean,
  field = 'url',
  resolve: Resolver = systemResolver,
): Promise<VettedTarget> {
  let url: URL;
  try {
    url = new URL(raw.trim());
  } catch {
    throw badInput(field, `'${raw}' is not an absolute URL`);
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') throw badInput(field, 'must use http or https');
  if (url.username || url.password) throw badInput(field, 'must not contain credentials');
  const host = url.hostname.replace(/^\[|\]$/g, '');
  let addresses: Array<{ address: string; family: number }>;
  if (isIP(host)) {
    addresses = [{ address: host, family: isIP(host) }];
  } else {
    try {
      addresses = await resolve(host);
    } catch {
      throw badInput(field, `host '${host}' does not resolve`);
    }
    if (addresses.length === 0) throw badInput(field, `host '${host}' does not resolve`);
  }
  // Every answer must pass: an attacker controlling DNS would otherwise mix in a private one.
  for (const { address } of addresses) {
    const kind = classifyAddress(address);
    if (kind === 'metadata')
      throw badInput(field, `resolves to ${address}, a cloud metadata address`, { address });
    if (kind === 'private' && !allowPrivate) {
      throw badInput(field, `resolves to ${address}, a private, loopback or link-local address`, { address });
    }
  }
  const chosen = addresses[0]!;
  return { url, address: chosen.address, family: chosen.family === 6 ? 6 : 4 };
}
