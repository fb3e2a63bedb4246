/** The suite's last two tests: the lifecycle after FUNCTION FLUSH, and every key of a job in one slot. */
import assert from 'node:assert/strict';
import { it } from 'node:test';
import type { SuiteHelpers, SuiteTarget } from './shared';
import { topicKeys, partitionOf } from '../../../lib/testing';

/** Declares the two tests outside any describe of the suite. */
export function flushAndSlots(target: SuiteTarget, h: SuiteHelpers): void {
  const { setup, sweep } = h;

  it('runs the lifecycle after FUNCTION FLUSH (the library is loaded again)', async () => {
    const { q, topic } = setup();
    await q.add({ topic, id: 'warm', delay: 0 });
    await target.flushScripts();
    await q.add({ topic, id: 'f', delay: 0 });
    assert.equal((await sweep(q)).moved, 2);
    const claimed = await q.engine.claim(topic, 2);
    assert.equal(claimed.length, 2);
    await target.flushScripts();
    for (const job of claimed) assert.equal(await q.engine.ack(topic, job.id, job), 'done');
    assert.equal((await q.get(topic, 'f'))?.state, 'done');
  });

  it('keeps every key of a job in its partition (one cluster slot per script)', async () => {
    const { q, topic } = setup();
    const ids = Array.from({ length: 20 }, (_, i) => `slot-${i}`);
    for (const id of ids) await q.add({ topic, id, delay: 0 });
    const partitions = new Set(ids.map((id) => partitionOf(topic, id, target.partitions)));
    if (target.partitions === 1) assert.deepEqual([...partitions], [0]);
    let total = 0;
    for (let p = 0; p < target.partitions; p++)
      total += await target.redis().zcard(topicKeys(p, topic, target.partitions).delayed);
    assert.equal(total, 20);
    if (target.partitions > 1) assert.ok(partitions.size > 1, 'jobs spread over partitions');
  });
}
