/** Versions: every change makes a new one; put and cancel honour If-Match. */
import assert from 'node:assert/strict';
import { it } from 'node:test';
import type { Job } from '../../../lib/engine';
import { rejects } from '../../support/queue';
import type { SuiteHelpers, SuiteTarget } from './shared';

/** Declares the versions test of the describe 'groups, listings and versions' (its caller declares the describe). */
export function versions(_target: SuiteTarget, h: SuiteHelpers): void {
  const { setup } = h;

  it('versions grow with every change; put and cancel honour If-Match', async () => {
    const { q, topic } = setup();
    const created = (await q.add({ topic, id: 'v', delay: 60 })).job;
    assert.ok(created.version > 0);
    assert.equal((await q.get(topic, 'v'))?.version, created.version, 'GET shows the version the add answered');
    const moved = (await q.reschedule(topic, 'v', { delay: 120 })).job;
    assert.ok(moved.version > created.version, 'a reschedule is a new version');
    const stale = await rejects(
      q.put(topic, 'v', { delay: 5 }, { ifMatch: { version: created.version } }),
      412,
      'VERSION_MISMATCH',
    );
    assert.equal((stale.details as { job: Job }).job.version, moved.version, 'the 412 carries the job as it stands');
    assert.equal((await q.get(topic, 'v'))?.runAt, moved.runAt, 'a refused put changed nothing');
    const put = await q.put(topic, 'v', { delay: 5, body: 'new' }, { ifMatch: { version: moved.version } });
    assert.equal(put.status, 'replaced');
    assert.ok(put.job.version > moved.version);
    await rejects(q.cancel(topic, 'v', { ifMatch: { version: moved.version } }), 412, 'VERSION_MISMATCH');
    assert.equal((await q.cancel(topic, 'v', { ifMatch: { version: put.job.version } })).state, 'cancelled');
    const missing = await rejects(q.cancel(topic, 'nope', { ifMatch: '*' }), 412, 'VERSION_MISMATCH');
    assert.deepEqual(missing.details, { job: null });
    await rejects(q.put(topic, 'nope', { delay: 1 }, { ifMatch: '*' }), 412, 'VERSION_MISMATCH');
    assert.equal(await q.get(topic, 'nope'), null, 'If-Match * creates nothing');
    // a cancelled job created anew by put gets a version no earlier incarnation had
    const again = await q.put(topic, 'v', { delay: 5 });
    assert.equal(again.status, 'created');
    assert.ok(again.job.version > put.job.version);
  });
}
