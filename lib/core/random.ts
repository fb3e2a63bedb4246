/**
 * Random bytes for ids and claim tokens, taken from a pool filled POOL_BYTES at a time: one
 * `randomFillSync` (a call into OpenSSL, a few µs) serves hundreds of ids instead of one. The bytes
 * are the same cryptographic randomness; each is handed out once.
 */
import { randomFillSync } from 'node:crypto';

const POOL_BYTES = 4096;
const pool = Buffer.alloc(POOL_BYTES);
let offset = POOL_BYTES;

/** `n` (at most POOL_BYTES) fresh random bytes, as a copy of the pool's next `n`. */
function take(n: number): Buffer {
  if (offset + n > POOL_BYTES) {
    randomFillSync(pool);
    offset = 0;
  }
  const bytes = Buffer.from(pool.subarray(offset, offset + n));
  offset += n;
  return bytes;
}

/** `n` random bytes as hex (2n characters). */
export function randomHex(n: number): string {
  return take(n).toString('hex');
}

/** `n` random bytes as base64url. */
export function randomBase64url(n: number): string {
  return take(n).toString('base64url');
}
