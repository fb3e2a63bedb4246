import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { jobKeys, partitionOf, slotOf, syncKey, topicKeys } from '../../lib/engine/keys';

describe('keys', () => {
  it('puts every key of a topic in one partition under one hash tag', () => {
    const keys = Object.values(topicKeys(3, 'orders'));
    assert.equal(keys.length, 7);
    for (const key of keys) assert.match(key, /^dq:\{p3\}:[a-z]+:orders$/);
    assert.equal(new Set(keys).size, 7);
    assert.equal(topicKeys(3, 'orders').bodies, 'dq:{p3}:bodies:orders');
  });

  it('partitions are stable: the same (topic, id) always lands in the same partition', () => {
    // FNV-1a reference values (checked with an independent implementation): changing the hash would strand existing jobs, so this must fail loudly.
    assert.equal(partitionOf('orders', 'order-1', 6), partitionOf('orders', 'order-1', 6));
    assert.deepEqual(
      ['a', 'b', 'c', 'order-1', 'order-2'].map((id) => partitionOf('orders', id, 16)),
      [9, 0, 3, 12, 5],
    );
    assert.equal(partitionOf('orders', 'anything', 1), 0);
  });

  it('spreads ids evenly enough over partitions', () => {
    const counts = new Array(6).fill(0);
    for (let i = 0; i < 60_000; i++) counts[partitionOf('t', `id-${i}`, 6)]++;
    for (const c of counts) assert.ok(c > 9000 && c < 11000, `partition sizes ${counts.join(',')}`);
  });

  it("jobKeys are the keys of the job's topic in the job's partition", () => {
    assert.deepEqual(jobKeys('orders', 'order-1', 16), topicKeys(12, 'orders'));
    assert.deepEqual(jobKeys('orders', 'order-1', 1), topicKeys(0, 'orders'));
  });
});

describe('cluster slots', () => {
  it("slotOf is Redis Cluster's CRC16 of the hash tag (values from the Redis Cluster spec and CLUSTER KEYSLOT)", () => {
    assert.equal(slotOf('123456789'), 0x31c3 % 16384); // the spec's CRC16 check value
    assert.equal(slotOf('foo'), 12182);
    assert.equal(slotOf('{user1000}.following'), slotOf('user1000'));
    assert.notEqual(slotOf('foo{}{bar}'), slotOf('bar'), 'an empty first tag: the whole key is hashed');
  });
  it("a partition's sync key shares the slot of its job keys", () => {
    for (const p of [0, 1, 7, 1023]) assert.equal(slotOf(syncKey(p)), slotOf(topicKeys(p, 'orders').jobs));
  });
});
