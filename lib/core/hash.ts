/** FNV-1a's offset basis: the state before any text. */
export const FNV1A_BASIS = 0x811c9dc5;
/** FNV-1a's prime. */
export const FNV1A_PRIME = 0x01000193;

/**
 * FNV-1a (32-bit, over UTF-16 code units) of `text`, as an unsigned integer. Stable: partitions and jitter depend on
 * it.
 */
export function fnv1a(text: string): number {
  return fnv1aOn(FNV1A_BASIS, text) >>> 0;
}

/** FNV-1a's state (signed 32-bit; `>>> 0` is the hash) after the first `end` code units of `text`, from `hash`. */
export function fnv1aOn(hash: number, text: string, end = text.length): number {
  for (let i = 0; i < end; i++) hash = Math.imul(hash ^ text.charCodeAt(i), FNV1A_PRIME);
  return hash;
}
