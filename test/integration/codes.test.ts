/**
 * The codes Lua and TypeScript share (lib/engine/codes.ts, lua/includes/job.lua) agree, and the
 * engine reports every refusal as its named code: no HTTP errors below lib/edge/queue.ts.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { resolveQueueConfig } from '../../lib/rules/config';
import * as engine from '../../lib/engine';
import { FANOUT_MARK, JOB_STATE, LEASE, OUTCOME, REFUSAL, WAKE } from '../../lib/engine/codes';
import { TestClock, uniqueTopic } from '../support/queue';
import { useRedisServer } from '../support/redis';
import common from '../../lua/includes/job.lua';

describe('codes shared by Lua and TypeScript', () => {
  const server = useRedisServer();

  it('every table of lib/engine/codes.ts has its twin, name for name, in lua/includes/job.lua', async () => {
    // run the helpers in Redis itself and read the tables back, so Lua parses them, not a regex
    const states = Object.keys(JOB_STATE).map((name) => `${name} = ${name}`).join(', ');
    const lua = `${common}\nreturn cjson.encode({ JOB_STATE = { ${states} }, REFUSAL = REFUSAL, OUTCOME = OUTCOME, LEASE = LEASE, WAKE = WAKE, FANOUT_MARK = FANOUT_MARK })`;
    const tables = JSON.parse((await server.client().eval(lua, 0)) as string);
    assert.deepEqual(tables, { JOB_STATE, REFUSAL, OUTCOME, LEASE, WAKE, FANOUT_MARK });
  });

  describe('the engine reports refusals as codes', () => {
    function setup() {
      const topic = uniqueTopic('codes');
      const config = resolveQueueConfig({ topics: { [topic]: { maxAttempts: 1 } } });
      const clock = new TestClock();
      const ctx: engine.EngineContext = { redis: server.client(), config, clock: () => clock.now, random: () => 0, rotation: new engine.Rotation() };
      const t = config.topics.get(topic)!;
      const job = (id: string): engine.NewJob => ({ topic, id, partition: 0, when: { kind: 'd', ms: 0 }, body: '{}' });
      return { ctx, t, job };
    }

    it('add: JOB_EXISTS for a taken id, JOB_FINISHED for a put over a running job', async () => {
      const { ctx, t, job } = setup();
      assert.equal((await engine.writeJobs(ctx, [job('a')], 'add')).results[0]!.status, 'created');
      const again = (await engine.writeJobs(ctx, [job('a')], 'add')).results[0]!;
      assert.ok(again.status === 'exists' && again.refusal === REFUSAL.JOB_EXISTS && again.job.id === 'a');
      await engine.sweep(ctx, 10);
      await engine.claimJobs(ctx, t, 1, 10);
      const put = (await engine.writeJobs(ctx, [job('a')], 'put')).results[0]!;
      assert.ok(put.status === 'finished' && put.refusal === REFUSAL.JOB_FINISHED && put.job.state === 'running');
    });

    it('cancel and reschedule: NOT_FOUND, and JOB_FINISHED with the job', async () => {
      const { ctx, t, job } = setup();
      assert.deepEqual(await engine.cancelJob(ctx, t, 'missing'), { refusal: REFUSAL.NOT_FOUND });
      assert.deepEqual(await engine.rescheduleJob(ctx, t, 'missing', { body: '1' }), { refusal: REFUSAL.NOT_FOUND });
      await engine.writeJobs(ctx, [job('d')], 'add');
      await engine.sweep(ctx, 10);
      const [claimed] = await engine.claimJobs(ctx, t, 1, 10);
      assert.equal((await engine.failJob(ctx, t, 'd', claimed!, 'no')).outcome, 'dead');
      const cancel = await engine.cancelJob(ctx, t, 'd');
      assert.ok(engine.isRefused(cancel) && cancel.refusal === REFUSAL.JOB_FINISHED && cancel.job?.state === 'dead');
      const reschedule = await engine.rescheduleJob(ctx, t, 'd', { body: '1' });
      assert.ok(engine.isRefused(reschedule) && reschedule.refusal === REFUSAL.JOB_FINISHED && reschedule.job?.state === 'dead');
    });
  });
});
