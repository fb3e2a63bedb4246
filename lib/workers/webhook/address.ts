/**
 * Webhook address policy: which IP addresses may be a delivery's destination, resolving a hostname
 * and checking every address it resolves to, and pinning the connection to the checked addresses
 * (so a second DNS answer cannot swap in a private one).
 */
import dns, { type LookupAddress } from 'node:dns';
import net, { type LookupFunction } from 'node:net';
import ipaddr from 'ipaddr.js';

/**
 * Names of ipaddr.js's special-purpose ranges as this policy reports them; any range not named
 * here is reported by its ipaddr.js name. The classification is ipaddr.js's (IANA's
 * special-purpose registries), kept up to date with that package.
 */
const LABELS: Record<string, string> = {
  linkLocal: 'link-local',
  carrierGradeNat: 'CGNAT',
  uniqueLocal: 'private',
  deprecatedSiteLocal: 'private',
  broadcast: 'reserved',
};

type IP = ipaddr.IPv4 | ipaddr.IPv6;
type Cidr = [IP, number];

/** Parses CIDR blocks (`10.42.0.0/16`, `2600:1f18::/56`); throws naming the first that is not one. */
export function parseCidrs(cidrs: readonly string[]): Cidr[] {
  return cidrs.map((cidr) => {
    try {
      return ipaddr.parseCIDR(cidr.trim());
    } catch {
      throw new Error(`not a CIDR block: ${JSON.stringify(cidr)}`);
    }
  });
}

/**
 * Returns why `ip` must not be a webhook destination, or null for a global unicast address
 * outside `denyCidrs` (the stack's own VPC). IPv4 addresses embedded in IPv6 (IPv4-mapped, SIIT,
 * NAT64 well-known prefix) are judged as IPv4; 6to4, Teredo and local-use NAT64 are refused,
 * naming the IPv4 address they embed.
 */
export function isForbiddenAddress(ip: string, denyCidrs: readonly string[] = []): string | null {
  const address = parse(ip);
  if (!address) return 'not an IP address';
  const deny = parseCidrs(denyCidrs);
  if (address.kind() === 'ipv4') return forbiddenV4(address as ipaddr.IPv4, deny);
  const v6 = address as ipaddr.IPv6;
  const range = v6.range() as string;
  const embedded = embeddedV4(v6, range);
  if (embedded) {
    const reason = forbiddenV4(embedded.v4, deny);
    if (embedded.judgedAsV4) return reason && `${embedded.kind} ${reason}`;
    return `${embedded.kind} (embeds ${embedded.v4.toString()}${reason ? `: ${reason}` : ''})`;
  }
  if (range !== 'unicast') return LABELS[range] ?? range;
  if (v6.parts[0]! >> 13 !== 0b001) return 'not global unicast (outside 2000::/3)';
  return inDenied(v6, deny);
}

/**
 * An IP literal as ipaddr.js sees it, or null. IPv6 goes through the WHATWG serializer first: ipaddr.js reads
 * `::a.b.c.d` as `::ffff:a.b.c.d`.
 */
function parse(ip: string): IP | null {
  const text = ip
    .trim()
    .replace(/^\[|\]$/g, '')
    .replace(/%.*$/, '');
  if (net.isIPv4(text)) return ipaddr.IPv4.parse(text);
  if (!net.isIPv6(text)) return null;
  return ipaddr.IPv6.parse(new URL(`http://[${text}]/`).hostname.slice(1, -1));
}

function forbiddenV4(v4: ipaddr.IPv4, deny: readonly Cidr[]): string | null {
  const range = v4.range() as string;
  if (range !== 'unicast') return LABELS[range] ?? range;
  return inDenied(v4, deny);
}

function inDenied(address: IP, deny: readonly Cidr[]): string | null {
  const hit = deny.find(([range, bits]) =>
    address.kind() === 'ipv4'
      ? range.kind() === 'ipv4' && (address as ipaddr.IPv4).match(range as ipaddr.IPv4, bits)
      : range.kind() === 'ipv6' && (address as ipaddr.IPv6).match(range as ipaddr.IPv6, bits),
  );
  return hit ? `in the stack's VPC (${hit[0].toString()}/${hit[1]})` : null;
}

/**
 * The IPv4 address an IPv6 address carries, and how: judged as IPv4 when the network translates
 * to it (IPv4-mapped, SIIT, NAT64 with the well-known prefix, which AWS's DNS64 hands out), refused
 * whole otherwise (local-use NAT64 translates inside the network; 6to4 and Teredo are transition
 * tunnels, not destinations a server has; IPv4-compatible addresses are deprecated, RFC 4291).
 */
function embeddedV4(v6: ipaddr.IPv6, range: string): { v4: ipaddr.IPv4; kind: string; judgedAsV4: boolean } | null {
  const p = v6.parts;
  const v4 = (hi: number, lo: number) => new ipaddr.IPv4([hi >> 8, hi & 0xff, lo >> 8, lo & 0xff]);
  if (range === 'ipv4Mapped') return { v4: v4(p[6]!, p[7]!), kind: 'IPv4-mapped', judgedAsV4: true };
  if (range === 'rfc6145') return { v4: v4(p[6]!, p[7]!), kind: 'SIIT', judgedAsV4: true };
  if (range === 'rfc6052' && p[2] === 0) return { v4: v4(p[6]!, p[7]!), kind: 'NAT64', judgedAsV4: true };
  if (range === 'rfc6052') return { v4: v4(p[6]!, p[7]!), kind: 'local-use NAT64', judgedAsV4: false };
  if (range === '6to4') return { v4: v4(p[1]!, p[2]!), kind: '6to4', judgedAsV4: false };
  if (range === 'teredo') return { v4: v4(p[6]! ^ 0xffff, p[7]! ^ 0xffff), kind: 'Teredo', judgedAsV4: false };
  if (p.slice(0, 6).every((x) => x === 0) && range === 'unicast')
    return { v4: v4(p[6]!, p[7]!), kind: 'IPv4-compatible', judgedAsV4: false };
  return null;
}

/**
 * Resolves `hostname` (an IP literal as itself) and returns its addresses; throws if the lookup
 * fails or any address is forbidden (isForbiddenAddress, with `denyCidrs`).
 */
export async function checkedAddresses(
  hostname: string,
  signal: AbortSignal,
  denyCidrs: readonly string[] = [],
): Promise<LookupAddress[]> {
  let addresses: LookupAddress[];
  const family = net.isIP(hostname);
  if (family) {
    addresses = [{ address: hostname, family }];
  } else {
    const lookup = dns.promises.lookup(hostname, { all: true });
    lookup.catch(() => {});
    try {
      addresses = await abortable(lookup, signal);
    } catch (err) {
      if (signal.aborted) throw err;
      throw new Error(`DNS lookup of ${hostname} failed: ${(err as NodeJS.ErrnoException).code ?? 'error'}`);
    }
    if (addresses.length === 0) throw new Error(`DNS lookup of ${hostname} returned no address`);
  }
  for (const { address } of addresses) {
    const reason = isForbiddenAddress(address, denyCidrs);
    if (reason) {
      throw new Error(
        family
          ? `refused: ${hostname} is a forbidden address (${reason})`
          : `refused: ${hostname} resolves to ${address} (${reason})`,
      );
    }
  }
  return addresses;
}

function abortable<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason);
    const onAbort = () => reject(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
  });
}

/** A `lookup` for http(s).request that answers only with `addresses` (already checked), never asking DNS again. */
export function pinnedLookup(addresses: LookupAddress[]): LookupFunction {
  return (_hostname, opts, callback) => {
    const fitting = addresses.filter((a) => !opts.family || a.family === opts.family);
    const usable = fitting.length ? fitting : addresses;
    if (opts.all) callback(null, usable);
    else callback(null, usable[0]!.address, usable[0]!.family);
  };
}
