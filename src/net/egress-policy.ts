import ipaddr from 'ipaddr.js';
import { domainToASCII } from 'node:url';

/**
 * Which addresses outbound HTTP (HTTP Request, Send Webhook) may reach.
 * Public unicast is allowed; loopback, private, link-local and other
 * special-purpose ranges are refused unless the operator lists the host name,
 * the address or a range containing it in FLOWGATE_HTTP_ALLOW_HOSTS, for
 * every port or, written `host:port`, for that port only (an internal host
 * listed for its API should not hand tenants its other services as well).
 */

type Address = ipaddr.IPv4 | ipaddr.IPv6;

/** The ports an entry allows: every one, or those listed. */
type Ports = 'any' | ReadonlySet<number>;

interface AllowedRange {
  readonly base: Address;
  readonly bits: number;
  /** Undefined: every port. */
  readonly port?: number;
}

export interface EgressAllowList {
  /** Lower-case ASCII host names, compared exactly (no wildcards), with the ports each may be reached on. */
  readonly hosts: ReadonlyMap<string, Ports>;
  /** Addresses and CIDR ranges; a single address is a /32 or /128. */
  readonly ranges: ReadonlyArray<AllowedRange>;
  /** The entries as the operator wrote them, for messages and logs. */
  readonly entries: readonly string[];
}

export const EMPTY_ALLOW_LIST: EgressAllowList = Object.freeze({ hosts: new Map<string, Ports>(), ranges: [], entries: [] });

export const ALLOW_HOSTS_VARIABLE = 'FLOWGATE_HTTP_ALLOW_HOSTS';

const HOST_LABEL = /^(?!-)[a-z0-9_-]{1,63}(?<!-)$/;

/** `Example.COM.` → `example.com`; undefined when it is not a valid host name. */
export function normalizeHostname(name: string): string | undefined {
  const ascii = domainToASCII(name.trim().replace(/\.$/, ''));
  if (!ascii || ascii.length > 253) return undefined;
  return ascii.split('.').every((label) => HOST_LABEL.test(label)) ? ascii : undefined;
}

/** IPv4 only in dotted-quad form, so `10.1` or `0x7f.1` in config is an error rather than a surprise. */
function parseStrictAddress(text: string): Address | undefined {
  if (ipaddr.IPv4.isValidFourPartDecimal(text)) return ipaddr.IPv4.parse(text);
  if (ipaddr.IPv6.isValid(text)) return ipaddr.IPv6.parse(text);
  return undefined;
}

/** `::ffff:10.0.0.0/104` is the same range as `10.0.0.0/8`; store it that way so IPv4 matches it. */
function unmapRange(address: Address, bits: number): readonly [Address, number] {
  if (address.kind() === 'ipv6' && (address as ipaddr.IPv6).isIPv4MappedAddress() && bits >= 96) {
    return [(address as ipaddr.IPv6).toIPv4Address(), bits - 96];
  }
  return [address, bits];
}

type Entry = { host: string; port?: number } | { range: readonly [Address, number]; port?: number };

/**
 * `entry` without its `:port`, and the port. A port follows a bracketed IPv6 address (`[fd00::1]:5432`) or an entry
 * with a single colon (`db.internal:5432`, `10.0.0.5:80`, `10.0.0.0/8:443`); a bare IPv6 address has none.
 */
function splitPort(entry: string): { text: string; port?: number } | undefined {
  const bracketed = /^\[([^\]]+)\](?::(\d+))?$/.exec(entry);
  if (bracketed) return portOf(bracketed[1]!, bracketed[2]);
  if (entry.indexOf(':') !== entry.lastIndexOf(':')) return { text: entry };
  const colon = entry.indexOf(':');
  return colon < 0 ? { text: entry } : portOf(entry.slice(0, colon), entry.slice(colon + 1));
}

function portOf(text: string, port: string | undefined): { text: string; port?: number } | undefined {
  if (port === undefined) return { text };
  const n = Number(port);
  return /^\d{1,5}$/.test(port) && n >= 1 && n <= 65535 ? { text, port: n } : undefined;
}

function parseEntry(entry: string): Entry | undefined {
  const split = splitPort(entry);
  if (!split) return undefined;
  const { text, port } = split;
  const slash = text.indexOf('/');
  if (slash >= 0) {
    const base = parseStrictAddress(text.slice(0, slash));
    const bitsText = text.slice(slash + 1);
    if (!base || !/^\d{1,3}$/.test(bitsText)) return undefined;
    const bits = Number(bitsText);
    if (bits > (base.kind() === 'ipv4' ? 32 : 128)) return undefined;
    return { range: unmapRange(base, bits), port };
  }
  const address = parseStrictAddress(text);
  if (address) return { range: unmapRange(address, address.kind() === 'ipv4' ? 32 : 128), port };
  // URLs read a name whose last label is numeric (`10.1`, `0x7f.1`) as an IPv4
  // address, so such an entry could never match as a host name: refuse it.
  if (/(^|\.)(\d+|0x[0-9a-f]*)\.?$/i.test(text)) return undefined;
  const host = normalizeHostname(text);
  return host ? { host, port } : undefined;
}

/**
 * Parses FLOWGATE_HTTP_ALLOW_HOSTS: comma-separated host names, IP addresses
 * and CIDR ranges, each optionally `:port`. Throws on the first invalid entry, naming it.
 */
export function parseAllowHosts(value: string | undefined): EgressAllowList {
  const entries = (value ?? '')
    .split(',')
    .map((e) => e.trim())
    .filter(Boolean);
  if (entries.length === 0) return EMPTY_ALLOW_LIST;
  const hosts = new Map<string, Ports>();
  const ranges: AllowedRange[] = [];
  for (const entry of entries) {
    const parsed = parseEntry(entry);
    if (!parsed) {
      throw new Error(
        `has an invalid entry ${JSON.stringify(entry)}: expected a host name, an IP address or a CIDR range, each optionally with :port (e.g. internal.example.com, db.internal:5432, 10.0.0.5, 10.0.0.0/8, [fd00::1]:443)`,
      );
    }
    if ('host' in parsed) {
      const known = hosts.get(parsed.host);
      if (parsed.port === undefined || known === 'any') hosts.set(parsed.host, 'any');
      else hosts.set(parsed.host, new Set([...(known ?? []), parsed.port]));
    } else {
      ranges.push({ base: parsed.range[0], bits: parsed.range[1], port: parsed.port });
    }
  }
  return Object.freeze({ hosts, ranges, entries });
}

const IPV4_REFUSED: Partial<Record<string, string>> = {
  unspecified: 'unspecified',
  broadcast: 'broadcast',
  multicast: 'multicast',
  linkLocal: 'link-local',
  loopback: 'loopback',
  carrierGradeNat: 'carrier-grade NAT',
  private: 'private',
  reserved: 'reserved',
};

const IPV6_REFUSED: Partial<Record<string, string>> = {
  unspecified: 'unspecified',
  linkLocal: 'link-local',
  multicast: 'multicast',
  loopback: 'loopback',
  uniqueLocal: 'private',
  deprecatedSiteLocal: 'private',
};

const GLOBAL_UNICAST_V6 = ipaddr.IPv6.parseCIDR('2000::/3');

function ipv4FromParts(high: number, low: number): ipaddr.IPv4 {
  return new ipaddr.IPv4([high >> 8, high & 0xff, low >> 8, low & 0xff]);
}

function refusedIPv4(address: ipaddr.IPv4): string | undefined {
  const range = IPV4_REFUSED[address.range()];
  if (range === 'link-local' && address.toString() === '169.254.169.254') return 'link-local, cloud metadata';
  return range;
}

/**
 * Why an address may not be reached by default (`loopback`, `private`, ...),
 * or undefined for public unicast. IPv6 forms that embed an IPv4 address
 * (mapped, translated, NAT64, 6to4) are judged by the embedded address.
 */
export function refusedRange(ip: string): string | undefined {
  let address: Address;
  try {
    address = ipaddr.parse(ip);
  } catch {
    return 'not an IP address';
  }
  if (address.kind() === 'ipv4') return refusedIPv4(address as ipaddr.IPv4);

  const v6 = address as ipaddr.IPv6;
  const range = v6.range();
  const p = v6.parts;
  if (range === 'ipv4Mapped' || range === 'rfc6145') return refusedIPv4(ipv4FromParts(p[6], p[7]));
  if (range === 'rfc6052') {
    // Only the well-known NAT64 prefix 64:ff9b::/96 has the IPv4 address in the last 32 bits.
    return p[2] === 0 && p[3] === 0 && p[4] === 0 && p[5] === 0 ? refusedIPv4(ipv4FromParts(p[6], p[7])) : 'reserved';
  }
  if (range === '6to4') return refusedIPv4(ipv4FromParts(p[1], p[2]));
  const named = IPV6_REFUSED[range];
  if (named) return named;
  // Outside 2000::/3 (IPv4-compatible ::a.b.c.d, unassigned space) or a
  // special-purpose block inside it (documentation, Teredo, ORCHID, ...).
  if (range !== 'unicast' || !v6.match(GLOBAL_UNICAST_V6)) return 'reserved';
  return undefined;
}

function inAllowedRange(ip: string, port: number, allowList: EgressAllowList): boolean {
  if (allowList.ranges.length === 0) return false;
  let address: Address;
  try {
    address = ipaddr.process(ip); // IPv4-mapped IPv6 → IPv4, so `127.0.0.1` also allows `::ffff:127.0.0.1`
  } catch {
    return false;
  }
  return allowList.ranges.some((r) => (r.port === undefined || r.port === port) && r.base.kind() === address.kind() && address.match(r.base, r.bits));
}

export type EgressVerdict = { allowed: true } | { allowed: false; range: string };

/** The decision for connecting to `ip` on `port`, reached through the URL host `hostname`. */
export function egressVerdict(ip: string, hostname: string, port: number, allowList: EgressAllowList): EgressVerdict {
  const range = refusedRange(ip);
  if (range === undefined) return { allowed: true };
  const host = normalizeHostname(hostname.replace(/^\[|\]$/g, ''));
  const ports = host ? allowList.hosts.get(host) : undefined;
  if (ports === 'any' || ports?.has(port)) return { allowed: true };
  if (inAllowedRange(ip, port, allowList)) return { allowed: true };
  return { allowed: false, range };
}

export function isAddressAllowed(ip: string, hostname: string, port: number, allowList: EgressAllowList): boolean {
  return egressVerdict(ip, hostname, port, allowList).allowed;
}
