/**
 * How the engine spreads one operation over partitions: every script call touches the keys of
 * one partition (one cluster slot), so an operation over several jobs or topics is grouped or
 * repeated per partition in one of three shapes: every partition at once (forEachPartition),
 * grouped by the partition of each item (groupBy, batchesByPartition), or one partition after another
 * until enough is done (a loop over partitionsInOrder or a Rotation's order).
 */

/** Partitions 0..count-1. */
export function partitionsInOrder(count: number): number[] {
  return Array.from({ length: count }, (_, partition) => partition);
}

/** Runs `fn` for every partition 0..count-1 at once; results in partition order. */
export function forEachPartition<T>(count: number, fn: (partition: number) => Promise<T>): Promise<T[]> {
  return Promise.all(partitionsInOrder(count).map(fn));
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
 * Groups items by partition, then by topic within it, and cuts each (partition, topic) group
 * into batches of at most `size`: one script call each. Partitions, groups and items keep the
 * order they first appear in.
 */
export function batchesByPartition<T>(items: readonly T[], slot: { partition(item: T): number; topic(item: T): string }, size: number): Map<number, T[][]> {
  const byPartition = new Map<number, T[][]>();
  for (const [partition, members] of groupBy(items, slot.partition)) {
    byPartition.set(partition, [...groupBy(members, slot.topic).values()].flatMap((group) => chunk(group, size)));
  }
  return byPartition;
}

/**
 * Partitions in round-robin order: each call of order() starts one partition further, so work
 * taken from the partitions in turn (claims) is not always taken from partition 0 first.
 */
export class Rotation {
  private next = 0;
  order(count: number): number[] {
    const start = this.next++ % count;
    return Array.from({ length: count }, (_, i) => (start + i) % count);
  }
}
