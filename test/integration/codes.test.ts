/**
 * The codes Lua and TypeScript share (lib/engine/codes.ts, lua/includes/codes.lua) agree, and the
 * engine reports every refusal as its named code: no HTTP errors below lib/api/queue.ts.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { resolveQueueConfig } from '../../lib/core/queue-config';
import * as engine from '../../lib/engine';
import { TestClock, uniqueTopic } from '../support/queue';
import { useRedisServer } from '../support/redis';
import common from '../../lua/includes/codes.lua';
import { FANOUT_MARK, JOB_STATE, KEY_CHANGE, LEASE, OUTCOME, REFUSAL, RELAYOUT, WAKE } from '../../lib/testing';

describe('codes shared by Lua and TypeScript', () => {
  const server = useRedisServer();

  it('every table of lib/engine/codes.ts has its twin, name for name, in lua/includes/codes.lua', async () => {
    // run the helpers in Redis itself and read the tables back, so Lua parses them, not a regex
    const states = Object.keys(JOB_STATE)
      .map((name) => `${name} = Codes.${name}`)
      .join(', ');
    const lua = `${common}\nreturn cjson.encode({ JOB_STATE = { ${states} }, REFUSAL = Codes.REFUSAL, OUTCOME = Codes.OUTCOME, LEASE = Codes.LEASE, WAKE = Codes.WAKE, FANOUT_MARK = Codes.FANOUT_MARK, KEY_CHANGE = Codes.KEY_CHANGE, RELAYOUT = Codes.RELAYOUT })`;
    const tables = JSON.parse((await server.client().eval(lua, 0)) as string);
    assert.deepEqual(tables, { JOB_STATE, REFUSAL, OUTCOME, LEASE, WAKE, FANOUT_MARK, KEY_CHANGE, RELAYOUT });
  });

  describe('the engine reports refusals as codes', () => {
    function setup() {
      const topic = uniqueTopic('codes');
      const config = resolveQueueConfig({ topics: { [topic]: { maxAttempts: 1 } } });
      const clock = new TestClock();
      const e = new engine.Engine(server.client(), config, { clock: () => clock.now, random: () => 0 });
      const job = (id: string): engine.NewJob => ({ topic, id, partition: 0, when: { kind: 'd', ms: 0 }, body: '{}' });
      return { e, topic, job };
    }

    it('add: JOB_EXISTS for a taken id, JOB_FINISHED for a put over a running job', async () => {
      const { e, topic, job } = setup();
      assert.equal((await e.write([job('a')], 'add')).results[0]!.status, 'created');
      const again = (await e.write([job('a')], 'add')).results[0]!;
      assert.ok(again.status === 'exists' && again.refusal === REFUSAL.JOB_EXISTS && again.job.id === 'a');
      await e.sweep(10);
      await e.claim(topic, 1, 10);
      const put = (await e.write([job('a')], 'put')).results[0]!;
      assert.ok(put.status === 'finished' && put.refusal === REFUSAL.JOB_FINISHED && put.job.state === 'running');
    });

    it('cancel and reschedule: NOT_FOUND, and JOB_FINISHED with the job', async () => {
      const { e, topic, job } = setup();
      assert.deepEqual(await e.cancel(topic, 'missing'), { refusal: REFUSAL.NOT_FOUND });
      assert.deepEqual(await e.reschedule(topic, 'missing', { body: '1' }), { refusal: REFUSAL.NOT_FOUND });
      await e.write([job('d')], 'add');
      await e.sweep(10);
      const [claimed] = await e.claim(topic, 1, 10);
      assert.equal((await e.fail(topic, 'd', claimed!, 'no')).outcome, 'dead');
      const cancel = await e.cancel(topic, 'd');
      assert.ok(engine.isRefused(cancel) && cancel.refusal === REFUSAL.JOB_FINISHED && cancel.job?.state === 'dead');
      const reschedule = await e.reschedule(topic, 'd', { body: '1' });
      assert.ok(
        engine.isRefused(reschedule) && reschedule.refusal === REFUSAL.JOB_FINISHED && reschedule.job?.state === 'dead',
      );
    });
  });
});
