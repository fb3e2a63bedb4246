/**
 * How the engine spreads one operation over partitions: every script call touches the keys of
 * one partition (one cluster slot), so an operation over several jobs or topics is grouped or
 * repeated per partition in one of three shapes: every partition at once (forEachPartition; plain
 * reads of every partition in one request per node: readSlots in lua.ts), grouped by the partition
 * of each item (groupBy, batchesByPartition), or one partition after another until enough is done
 * (a loop over partitionsInOrder or a Rotation's order).
 */

/** Partitions 0..count-1. */
export function partitionsInOrder(count: number): number[] {
  return Array.from({ length: count }, (_, partition) => partition);
}

/** Runs `fn` for every partition of `partitions` (a list, or a count: 0..count-1) at once; results in their order. */
export function forEachPartition<T>(
  partitions: number | readonly number[],
  fn: (partition: number) => Promise<T>,
): Promise<T[]> {
  return Promise.all((typeof partitions === 'number' ? partitionsInOrder(partitions) : partitions).map(fn));
}

/** Groups items by `key`; groups, and items within a group, keep the order they first appear in. */
export function groupBy<T, K>(items: readonly T[], key: (item: T) => K): Map<K, T[]> {
  const groups = new Map<K, T[]>();
  for (const item of items) {
    const k = key(item);
    const group = groups.get(k);
    if (group) group.push(item);
    else groups.set(k, [item]);
  }
  return groups;
}

/** Cuts items into runs of at most `size`. */
export function chunk<T>(items: readonly T[], size: number): T[][] {
  const chunks: T[][] = [];
  for (let i = 0; i < items.length; i += size) chunks.push(items.slice(i, i + size));
  return chunks;
}

/**
 * Cuts items into runs of at most `size` items and at most `maxBytes` bytes (by `bytes`), keeping
 * their order; an item over `maxBytes` alone is a run of its own.
 */
export function chunkBySize<T>(items: readonly T[], size: number, maxBytes: number, bytes: (item: T) => number): T[][] {
  const chunks: T[][] = [];
  let current: T[] = [];
  let used = 0;
  for (const item of items) {
    const n = bytes(item);
    if (current.length > 0 && (current.length >= size || used + n > maxBytes)) {
      chunks.push(current);
      current = [];
      used = 0;
    }
    current.push(item);
    used += n;
  }
  if (current.length > 0) chunks.push(current);
  return chunks;
}

/**
 * Groups items by partition, then by topic within it, and cuts each (partition, topic) group
 * into batches of at most `size` items (and, given `bytes`, at most `maxBytes` bytes, an item over
 * it alone): one script call each. Partitions, groups and items keep the order they first appear in.
 */
export function batchesByPartition<T>(
  items: readonly T[],
  slot: { partition(item: T): number; topic(item: T): string },
  size: number,
  bySize?: { maxBytes: number; bytes(item: T): number },
): Map<number, T[][]> {
  const byPartition = new Map<number, T[][]>();
  for (const [partition, members] of groupBy(items, slot.partition)) {
    const groups = [...groupBy(members, slot.topic).values()];
    byPartition.set(
      partition,
      groups.flatMap((group) =>
        bySize ? chunkBySize(group, size, bySize.maxBytes, bySize.bytes) : chunk(group, size),
      ),
    );
  }
  return byPartition;
}

/**
 * How many items a script call looked at, when the call stops at its byte budget and the caller
 * sends the rest again: never 0 (the first item is always looked at), else the loop would not end.
 */
export function atLeastOne(looked: number, script: string): number {
  if (looked < 1) throw new Error(`${script} looked at none of the items it was sent`);
  return looked;
}

/**
 * Partitions in round-robin order: each call of order() starts one partition further, so work
 * taken from the partitions in turn (claims) is not always taken from partition 0 first.
 */
export class Rotation {
  constructor(private next = 0) {}
  order(count: number): number[] {
    const start = this.next++ % count;
    return Array.from({ length: count }, (_, i) => (start + i) % count);
  }
  /** One partition of `count`, one further each call. */
  take(count: number): number {
    return this.next++ % count;
  }

  /**
   * One partition of `count` each call, every one once in `count` calls, in an order that spreads them: each call goes
   * about 0.618 of the partitions further (a step coprime to `count`). A primary holds a run of consecutive
   * partitions (keys.ts), so calls that end within a round still leave each primary about its share.
   */
  spread(count: number): number {
    return ((this.next++ % count) * spreadStep(count)) % count;
  }
}

const steps = new Map<number, number>();

/** The step of Rotation.spread over `count` partitions: the integer nearest 0.618 × count that is coprime to it. */
function spreadStep(count: number): number {
  let step = steps.get(count);
  if (step !== undefined) return step;
  const gcd = (a: number, b: number): number => (b === 0 ? a : gcd(b, a % b));
  const near = Math.max(1, Math.round(count * 0.618));
  for (let d = 0; step === undefined; d++) {
    if (near + d < count && gcd(near + d, count) === 1) step = near + d;
    else if (near - d >= 1 && gcd(near - d, count) === 1) step = near - d;
  }
  steps.set(count, step);
  return step;
}
