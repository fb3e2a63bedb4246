/**
 * Random bytes for ids and claim tokens, taken from a pool filled POOL_BYTES at a time: one
 * `randomFillSync` (a call into OpenSSL, a few µs) serves hundreds of ids instead of one. The bytes
 * are the same cryptographic randomness; each is handed out once.
 */
import { randomFillSync } from 'node:crypto';

const POOL_BYTES = 4096;
const pool = Buffer.alloc(POOL_BYTES);
let offset = POOL_BYTES;

/** The next `n` (at most POOL_BYTES) fresh bytes of the pool, written as `encoding`. */
function take(n: number, encoding: 'hex' | 'base64url'): string {
  if (offset + n > POOL_BYTES) {
    randomFillSync(pool);
    offset = 0;
  }
  offset += n;
  return pool.toString(encoding, offset - n, offset);
}

/** `n` random bytes as hex (2n characters). */
export function randomHex(n: number): string {
  return take(n, 'hex');
}

/** A fresh job id: 16 characters of [A-Za-z0-9_-], 96 random bits. */
export function newJobId(): string {
  return take(12, 'base64url');
}

/** `n` random bytes as base64url. */
export function randomBase64url(n: number): string {
  return take(n, 'base64url');
}
