import { lookup as dnsLookup } from 'node:dns/promises';
import { BlockList, isIP } from 'node:net';
import { badInput } from '../kernel/errors.js';

/**
 * SSRF guard for webhook URLs. A URL is checked when it is registered and again before every
 * delivery (DNS may change); the delivery then connects only to addresses that were checked,
 * so a second, different DNS answer cannot slip a private address in between check and connect.
 *
 * "Public" means: outside every block of the IANA IPv4 and IPv6 Special-Purpose Address
 * Registries (even the few marked globally reachable — anycast relays, AS112 sinks, TURN — since
 * nothing there is a webhook receiver), outside multicast, and for IPv6 inside global unicast
 * 2000::/3. IPv6 forms that embed an IPv4 address (IPv4-mapped, IPv4-compatible, SIIT, NAT64,
 * 6to4) are classed by the embedded address, so `::ffff:a9fe:a9fe` is the metadata service.
 */

const IPV4_SPECIAL: ReadonlyArray<readonly [string, number]> = [
  ['0.0.0.0', 8], // "this network"
  ['10.0.0.0', 8], // private
  ['100.64.0.0', 10], // shared address space (carrier-grade NAT)
  ['127.0.0.0', 8], // loopback
  ['169.254.0.0', 16], // link-local, incl. cloud metadata
  ['172.16.0.0', 12], // private
  ['192.0.0.0', 24], // IETF protocol assignments (incl. DS-Lite, PCP and TURN anycast)
  ['192.0.2.0', 24], // documentation (TEST-NET-1)
  ['192.31.196.0', 24], // AS112-v4
  ['192.52.193.0', 24], // AMT
  ['192.88.99.0', 24], // deprecated 6to4 relay anycast
  ['192.168.0.0', 16], // private
  ['192.175.48.0', 24], // AS112 direct delegation
  ['198.18.0.0', 15], // benchmarking
  ['198.51.100.0', 24], // documentation (TEST-NET-2)
  ['203.0.113.0', 24], // documentation (TEST-NET-3)
  ['224.0.0.0', 4], // multicast
  ['240.0.0.0', 4], // reserved, incl. limited broadcast 255.255.255.255
];

const IPV6_SPECIAL: ReadonlyArray<readonly [string, number]> = [
  ['64:ff9b:1::', 48], // local-use IPv4/IPv6 translation
  ['100::', 64], // discard-only
  ['100:0:0:1::', 64], // dummy prefix
  ['2001::', 23], // IETF protocol assignments (Teredo, benchmarking, ORCHID, AMT, AS112 …)
  ['2001:db8::', 32], // documentation
  ['2620:4f:8000::', 48], // AS112 direct delegation
  ['3fff::', 20], // documentation
  ['5f00::', 16], // SRv6 SIDs
  ['fc00::', 7], // unique local, incl. fd00:ec2::254
  ['fe80::', 10], // link-local
  ['fec0::', 10], // site-local (deprecated, still routed inside some networks)
  ['ff00::', 8], // multicast
];

const SPECIAL = new BlockList();
for (const [net, prefix] of IPV4_SPECIAL) SPECIAL.addSubnet(net, prefix, 'ipv4');
for (const [net, prefix] of IPV6_SPECIAL) SPECIAL.addSubnet(net, prefix, 'ipv6');

const GLOBAL_UNICAST = new BlockList();
GLOBAL_UNICAST.addSubnet('2000::', 3, 'ipv6');

/**
 * Cloud metadata services (AWS incl. ECS task metadata and IPv6, GCP, Azure, Oracle, Alibaba):
 * refused even when private addresses are allowed, since nothing legitimate lives there.
 */
const METADATA_V4 = new Set(['169.254.169.254', '169.254.170.2', '100.100.100.200']);
const METADATA_V6 = new Set(['fd00:ec2:0:0:0:0:0:254']);

export type AddressClass = 'public' | 'private' | 'metadata';

/** 16 bytes of a valid IPv6 literal (zone id dropped), as eight 16-bit groups. */
function ipv6Groups(address: string): number[] {
  let text = address.toLowerCase().replace(/%.*$/, '');
  const dotted = /(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(text);
  if (dotted) {
    const [a, b, c, d] = dotted.slice(1).map(Number) as [number, number, number, number];
    text = `${text.slice(0, dotted.index)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [head, tail] = text.split('::') as [string, string | undefined];
  const left = head ? head.split(':') : [];
  const right = tail ? tail.split(':') : [];
  const fill = tail === undefined ? [] : new Array<string>(8 - left.length - right.length).fill('0');
  return [...left, ...fill, ...right].map((g) => parseInt(g, 16));
}

function ipv4Of(high: number, low: number): string {
  return `${high >> 8}.${high & 0xff}.${low >> 8}.${low & 0xff}`;
}

/** The IPv4 address an IPv6 address carries, for the forms that route to it. */
function embeddedIpv4(g: number[]): string | undefined {
  const zeros = (from: number, to: number) => g.slice(from, to).every((x) => x === 0);
  // ::a.b.c.d (IPv4-compatible, deprecated), ::ffff:a.b.c.d (mapped), ::ffff:0:a.b.c.d (SIIT)
  if (zeros(0, 5) && (g[5] === 0 || g[5] === 0xffff)) return ipv4Of(g[6]!, g[7]!);
  if (zeros(0, 4) && g[4] === 0xffff && g[5] === 0) return ipv4Of(g[6]!, g[7]!);
  // 64:ff9b::a.b.c.d (NAT64 well-known prefix)
  if (g[0] === 0x64 && g[1] === 0xff9b && zeros(2, 6)) return ipv4Of(g[6]!, g[7]!);
  // 2002:aabb:ccdd::/48 (6to4)
  if (g[0] === 0x2002) return ipv4Of(g[1]!, g[2]!);
  return undefined;
}

function classifyIpv4(ip: string): AddressClass {
  if (METADATA_V4.has(ip)) return 'metadata';
  return SPECIAL.check(ip, 'ipv4') ? 'private' : 'public';
}

export function classifyAddress(address: string): AddressClass {
  const family = isIP(address.replace(/%.*$/, ''));
  if (family === 4) return classifyIpv4(address);
  if (family !== 6) return 'private';
  const groups = ipv6Groups(address);
  const ipv4 = embeddedIpv4(groups);
  if (ipv4) return classifyIpv4(ipv4);
  const canonical = groups.map((g) => g.toString(16)).join(':');
  if (METADATA_V6.has(canonical)) return 'metadata';
  if (SPECIAL.check(canonical, 'ipv6') || !GLOBAL_UNICAST.check(canonical, 'ipv6')) return 'private';
  return 'public';
}

export interface ResolvedAddress {
  address: string;
  family: 4 | 6;
}

export interface VettedTarget {
  url: URL;
  /** Every address the host resolved to, all checked, in the resolver's order: connect to these only. */
  addresses: ResolvedAddress[];
}

/** Looks a host up. DNS is the edge of the world: tests pass a resolver to play a hostile DNS server. */
export type Resolver = (hostname: string) => Promise<Array<{ address: string; family: number }>>;

const systemResolver: Resolver = (hostname) => dnsLookup(hostname, { all: true, verbatim: true });

export interface VetOptions {
  resolve?: Resolver;
  /** Gives up waiting for DNS when aborted (the delivery attempt's deadline); rejects with the reason. */
  signal?: AbortSignal;
}

function abortable<T>(promise: Promise<T>, signal: AbortSignal | undefined): Promise<T> {
  if (!signal) return promise;
  if (signal.aborted) return Promise.reject(signal.reason as Error);
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason as Error);
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
  });
}

/**
 * Parses and checks a webhook URL: http(s), no credentials, and every address the host resolves
 * to must be public (unless `allowPrivate`; metadata addresses never). Throws BAD_USER_INPUT
 * naming `url`.
 */
export async function vetWebhookUrl(
  raw: string,
  allowPrivate: boolean,
  options: VetOptions = {},
): Promise<VettedTarget> {
  const { resolve = systemResolver, signal } = options;
  let url: URL;
  try {
    url = new URL(raw.trim());
  } catch {
    throw badInput('url', `'${raw}' is not an absolute URL`);
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') throw badInput('url', 'must use http or https');
  if (url.username || url.password) throw badInput('url', 'must not contain credentials');
  const host = url.hostname.replace(/^\[|\]$/g, '');
  let answers: Array<{ address: string; family: number }>;
  if (isIP(host)) {
    answers = [{ address: host, family: isIP(host) }];
  } else {
    try {
      answers = await abortable(resolve(host), signal);
    } catch (e) {
      if (signal?.aborted) throw e;
      throw badInput('url', `host '${host}' does not resolve`);
    }
    if (answers.length === 0) throw badInput('url', `host '${host}' does not resolve`);
  }
  // Every answer must pass: an attacker controlling DNS would otherwise mix in a private one.
  for (const { address } of answers) {
    const kind = classifyAddress(address);
    if (kind === 'public' || (kind === 'private' && allowPrivate)) continue;
    // An address typed into the URL can be named; one that DNS answered cannot: the refusal would
    // tell the caller what a name resolves to from inside our network (a DNS oracle).
    if (isIP(host)) {
      throw badInput(
        'url',
        kind === 'metadata'
          ? `${host} is a cloud metadata address`
          : `${host} is a private, loopback, link-local or reserved address`,
      );
    }
    throw badInput('url', `host '${host}' resolves to an address webhooks may not reach`);
  }
  return {
    url,
    addresses: answers.map(({ address, family }) => ({ address, family: family === 6 ? 6 : 4 })),
  };
}
