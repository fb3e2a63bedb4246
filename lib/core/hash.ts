/**
 * FNV-1a (32-bit, over UTF-16 code units) of `text`, as an unsigned integer. Stable: partitions and jitter depend on
 * it.
 */
export function fnv1a(text: string): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    hash ^= text.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193);
  }
  return hash >>> 0;
}
