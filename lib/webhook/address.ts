/**
 * Webhook address policy: which IP addresses may be a delivery's destination, resolving a hostname
 * and checking every address it resolves to, and pinning the connection to the checked addresses
 * (so a second DNS answer cannot swap in a private one).
 */
import dns, { type LookupAddress } from 'node:dns';
import net, { type LookupFunction } from 'node:net';

/** Returns why `ip` must not be a webhook destination (loopback, private, link-local, …), or null for a public unicast address. */
export function isForbiddenAddress(ip: string): string | null {
  const address = ip.trim();
  if (net.isIPv4(address)) return forbiddenV4(parseV4(address));
  const bare = address.replace(/^\[|\]$/g, '').replace(/%.*$/, '');
  if (!net.isIPv6(bare)) return 'not an IP address';
  const g = parseV6(bare);
  if (g.every((x) => x === 0)) return 'unspecified';
  if (g.slice(0, 7).every((x) => x === 0) && g[7] === 1) return 'loopback';
  const embedded = embeddedV4(g);
  if (embedded) {
    const reason = forbiddenV4(embedded.v4);
    return reason && `${embedded.kind} ${reason}`;
  }
  const first = g[0]!;
  if ((first & 0xfe00) === 0xfc00) return 'private';
  if ((first & 0xffc0) === 0xfe80) return 'link-local';
  if ((first & 0xffc0) === 0xfec0) return 'private';
  if ((first & 0xff00) === 0xff00) return 'multicast';
  return null;
}

function parseV4(address: string): number[] {
  return address.split('.').map(Number);
}

function forbiddenV4([a = 0, b = 0]: number[]): string | null {
  if (a === 0) return 'unspecified';
  if (a === 127) return 'loopback';
  if (a === 10 || (a === 172 && b >= 16 && b <= 31) || (a === 192 && b === 168)) return 'private';
  if (a === 169 && b === 254) return 'link-local';
  if (a === 100 && b >= 64 && b <= 127) return 'CGNAT';
  if (a >= 224 && a <= 239) return 'multicast';
  if (a >= 240) return 'reserved';
  return null;
}

function parseV6(address: string): number[] {
  let text = address.toLowerCase();
  const dotted = /(\d+\.\d+\.\d+\.\d+)$/.exec(text);
  if (dotted) {
    const [a = 0, b = 0, c = 0, d = 0] = parseV4(dotted[1]!);
    text = `${text.slice(0, dotted.index)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [head = '', tail] = text.split('::');
  const parts = (s: string) => (s ? s.split(':').map((h) => parseInt(h, 16)) : []);
  const left = parts(head);
  const right = tail === undefined ? [] : parts(tail);
  return [...left, ...Array<number>(8 - left.length - right.length).fill(0), ...right];
}

function embeddedV4(g: number[]): { v4: number[]; kind: string } | null {
  const v4 = [g[6]! >> 8, g[6]! & 0xff, g[7]! >> 8, g[7]! & 0xff];
  const zeros = (from: number, to: number) => g.slice(from, to).every((x) => x === 0);
  if (zeros(0, 5) && g[5] === 0xffff) return { v4, kind: 'IPv4-mapped' };
  if (zeros(0, 6)) return { v4, kind: 'IPv4-compatible' };
  if (g[0] === 0x64 && g[1] === 0xff9b && zeros(2, 6)) return { v4, kind: 'NAT64' };
  return null;
}

/** Resolves `hostname` (an IP literal as itself) and returns its addresses; throws if the lookup fails or any address is forbidden. */
export async function checkedAddresses(hostname: string, signal: AbortSignal): Promise<LookupAddress[]> {
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
    const reason = isForbiddenAddress(address);
    if (reason) {
      throw new Error(family ? `refused: ${hostname} is a forbidden address (${reason})` : `refused: ${hostname} resolves to ${address} (${reason})`);
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
