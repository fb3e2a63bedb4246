import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { batchesByPartition, chunk, forEachPartition, groupBy, partitionsInOrder, Rotation } from '../../lib/testing';

describe('partition helpers', () => {
  it('groupBy keeps first-seen order of groups and of items', () => {
    assert.deepEqual(
      [...groupBy([3, 1, 4, 1, 5, 9, 2, 6], (n) => n % 3)],
      [
        [0, [3, 9, 6]],
        [1, [1, 4, 1]],
        [2, [5, 2]],
      ],
    );
  });

  it('chunk cuts runs of at most size', () => {
    assert.deepEqual(chunk([1, 2, 3, 4, 5], 2), [[1, 2], [3, 4], [5]]);
    assert.deepEqual(chunk([], 2), []);
  });

  it('batchesByPartition: per partition, one batch list per topic, each batch of one topic and at most size', () => {
    const items = [
      { p: 1, t: 'a', n: 1 },
      { p: 0, t: 'b', n: 2 },
      { p: 1, t: 'b', n: 3 },
      { p: 1, t: 'a', n: 4 },
      { p: 1, t: 'a', n: 5 },
      { p: 0, t: 'b', n: 6 },
    ];
    const batches = batchesByPartition(items, { partition: (i) => i.p, topic: (i) => i.t }, 2);
    const ns = [...batches].map(([p, bs]) => [p, bs.map((b) => b.map((i) => i.n))]);
    assert.deepEqual(ns, [
      [1, [[1, 4], [5], [3]]],
      [0, [[2, 6]]],
    ]);
  });

  it('forEachPartition runs every partition, results in partition order', async () => {
    assert.deepEqual(await forEachPartition(4, async (p) => p * 10), [0, 10, 20, 30]);
    assert.deepEqual(partitionsInOrder(3), [0, 1, 2]);
  });

  it('a Rotation starts one partition further each time', () => {
    const r = new Rotation();
    assert.deepEqual(
      [r.order(3), r.order(3), r.order(3), r.order(3)],
      [
        [0, 1, 2],
        [1, 2, 0],
        [2, 0, 1],
        [0, 1, 2],
      ],
    );
    assert.deepEqual(new Rotation().order(1), [0]);
  });
});
