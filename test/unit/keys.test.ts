import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  jobKeys,
  Layout,
  layoutOf,
  partitionOf,
  partitionTag,
  slotOf,
  steerId,
  syncKey,
  topicKeys,
} from '../../lib/testing';
import { newJobId } from '../../lib/core/random';

describe('keys', () => {
  it('puts every key of a topic in one partition under one hash tag', () => {
    const keys = Object.values(topicKeys(3, 'orders', 8));
    assert.equal(keys.length, 7);
    const tag = partitionTag(3, 8);
    for (const key of keys) assert.equal(key.replace(/:[a-z]+:orders$/, ''), `dq:{${tag}}`);
    assert.equal(new Set(keys).size, 7);
    assert.equal(topicKeys(3, 'orders', 8).bodies, `dq:{${tag}}:bodies:orders`);
    assert.equal(topicKeys(0, 'orders', 1).jobs, 'dq:{p0}:jobs:orders', 'one partition: p0');
  });

  it('partitions are stable: the same (topic, id) always lands in the same partition', () => {
    // FNV-1a reference values (checked with an independent implementation): changing the hash would strand existing
    // jobs, so this must fail loudly.
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
    assert.deepEqual(jobKeys('orders', 'order-1', 16), topicKeys(12, 'orders', 16));
    assert.deepEqual(jobKeys('orders', 'order-1', 1), topicKeys(0, 'orders', 1));
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
    for (const p of [0, 1, 7, 1023]) assert.equal(slotOf(syncKey(p, 1024)), slotOf(topicKeys(p, 'orders', 1024).jobs));
  });

  /** Slot ranges of `masters` masters as `redis-cli --cluster create` deals them: equal runs, in order. */
  function masterRanges(masters: number): [number, number][] {
    const per = 16384 / masters;
    const ranges: [number, number][] = [];
    let first = 0;
    for (let m = 0; m < masters; m++) {
      const last = m === masters - 1 ? 16383 : Math.max(first, Math.round(per * (m + 1) - 1));
      ranges.push([first, last]);
      first = last + 1;
    }
    return ranges;
  }

  it('partitions land evenly on the masters: count / masters each when that divides, never more than one apart', () => {
    for (let masters = 1; masters <= 16; masters++) {
      const ranges = masterRanges(masters);
      for (const count of [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 12, 16, 24, 27, 36, 64, 100, 256, 1024]) {
        const held = ranges.map(() => 0);
        for (let p = 0; p < count; p++) {
          const slot = slotOf(`{${partitionTag(p, count)}}`);
          held[ranges.findIndex(([a, b]) => slot >= a && slot <= b)]! += 1;
        }
        const spread = `${count} partitions on ${masters} masters: ${held.join('/')}`;
        if (count % masters === 0)
          assert.ok(
            held.every((n) => n === count / masters),
            spread,
          );
        assert.ok(Math.max(...held) - Math.min(...held) <= 1, spread);
      }
    }
  });

  it("a partition's tag lies in the middle slot of its share of the slots; one partition alone is p0", () => {
    assert.equal(partitionTag(0, 1), 'p0');
    for (const count of [2, 12, 1024])
      for (let p = 0; p < count; p++)
        assert.equal(slotOf(`{${partitionTag(p, count)}}`), Math.floor(((p + 0.5) * 16384) / count));
    assert.equal(new Set(Array.from({ length: 1024 }, (_, p) => partitionTag(p, 1024))).size, 1024);
    assert.throws(() => partitionTag(4, 4), RangeError);
  });

  it('no two partition counts share a tag, even where their partitions share a middle slot', () => {
    // partition 1 of 4 and partition 4 of 12 have the same middle slot (6144), as have 1 of 3 and 4 of 9
    const pairs: [number, number, number, number][] = [
      [1, 4, 4, 12],
      [1, 3, 4, 9],
    ];
    for (const [p, count, q, other] of pairs) {
      assert.equal(slotOf(`{${partitionTag(p, count)}}`), slotOf(`{${partitionTag(q, other)}}`), 'the same slot');
      assert.notEqual(partitionTag(p, count), partitionTag(q, other), 'not the same tag');
    }
    const tags = new Set<string>();
    for (const count of [1, 2, 3, 4, 6, 8, 9, 12, 16, 24, 36])
      for (let p = 0; p < count; p++) tags.add(partitionTag(p, count));
    assert.equal(
      tags.size,
      [1, 2, 3, 4, 6, 8, 9, 12, 16, 24, 36].reduce((a, b) => a + b, 0),
    );
  });

  it("a layout numbers the current layout's partitions first, then the former one's, and places jobs in either", () => {
    const layout = new Layout(12, 4);
    assert.equal(layout.size, 16);
    for (let p = 0; p < 12; p++) assert.equal(layout.tag(p), partitionTag(p, 12));
    for (let p = 0; p < 4; p++) assert.equal(layout.tag(12 + p), partitionTag(p, 4));
    assert.equal(topicKeys(13, 'orders', layout).jobs, `dq:{${partitionTag(1, 4)}}:jobs:orders`);
    for (const id of ['a', 'b', 'order-1', 'daily:20270328T010000Z']) {
      assert.equal(layout.placeOf('orders', id), partitionOf('orders', id, 12));
      assert.equal(layout.formerPlaceOf('orders', id), 12 + partitionOf('orders', id, 4));
      assert.deepEqual(jobKeys('orders', id, layout), topicKeys(partitionOf('orders', id, 12), 'orders', 12));
    }
    assert.equal(new Layout(4).formerPlaceOf('orders', 'a'), null, 'no change under way');
    assert.equal(layoutOf(4), layoutOf(4), 'a count alone stands for one layout, made once');
    assert.equal(layoutOf(layout), layout);
  });
});

describe('steerId (a batch add places the ids it generates)', () => {
  it('changes the last two characters so that the id falls in the partition asked for', () => {
    for (const count of [2, 3, 12, 36, 100, 255]) {
      for (let n = 0; n < 200; n++) {
        const id = newJobId();
        const target = n % count;
        const steered = steerId('orders', id, count, target);
        assert.equal(partitionOf('orders', steered, count), target, `${id} → ${steered} of ${count}`);
        assert.equal(steered.slice(0, 14), id.slice(0, 14), 'the first 14 characters kept');
        assert.match(steered, /^[A-Za-z0-9_-]{16}$/);
      }
    }
  });

  it('keeps an id that already falls there, and one no two characters can place (too many partitions)', () => {
    const id = newJobId();
    assert.equal(steerId('orders', id, 12, partitionOf('orders', id, 12)), id, 'the search starts at its own two');
    // 4,096 pairs cannot reach one partition of 2^31 (but by a chance of 2^-19): the id as it came
    const far = 2 ** 31;
    const misses = Array.from({ length: 20 }, newJobId).filter((i) => steerId('orders', i, far, 7) === i).length;
    assert.ok(misses >= 19, `${misses} of 20 unchanged`);
  });

  it('the ids it gives stay random: 2,000 steered into one partition of 12 are all different', () => {
    const ids = Array.from({ length: 2000 }, () => steerId('orders', newJobId(), 12, 5));
    assert.equal(new Set(ids).size, 2000);
    // the last two characters are not always the alphabet's first: the search starts from the id's own
    assert.ok(new Set(ids.map((i) => i.slice(-2))).size > 100);
  });
});
