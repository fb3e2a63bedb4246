import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { resolveQueueConfig } from '../../lib/core/queue-config';
import { queueOf } from '../support/queue';
import { Engine } from '../../lib/engine';
import { uniqueTopic } from '../support/queue';
import { useRedisServer } from '../support/redis';

describe('due times come from the Redis clock', () => {
  const server = useRedisServer();

  async function redisNow(): Promise<number> {
    const [s, us] = await server.client().time();
    return Number(s) * 1000 + Math.floor(Number(us) / 1000);
  }

  for (const skewMin of [10, -10]) {
    it(`a job added by a client whose clock is ${skewMin} minutes off is due on Redis's clock`, async (t) => {
      const topic = uniqueTopic('skew');
      const q = queueOf(new Engine(server.client(), resolveQueueConfig({ topics: { [topic]: {} } })));
      const realNow = Date.now();
      t.mock.timers.enable({ apis: ['Date'], now: realNow + skewMin * 60_000 });
      assert.ok(Math.abs(Date.now() - realNow - skewMin * 60_000) < 1000, 'the client clock is skewed');
      const before = await redisNow();
      const added = await q.add({ topic, id: 'skewed', delay: 600 });
      const afterAdd = await redisNow();
      t.mock.timers.reset();
      const runAt = Date.parse(added.job.runAt);
      assert.ok(
        runAt >= before + 600_000 && runAt <= afterAdd + 600_000,
        `runAt ${runAt} within Redis [${before}, ${afterAdd}] + 600 s`,
      );
      assert.equal((await q.engine.sweep()).moved, 0, 'not due now on the Redis clock');
      const later = queueOf(
        new Engine(server.client(), resolveQueueConfig({ topics: { [topic]: {} } }), { clock: () => runAt }),
      );
      assert.equal((await later.engine.sweep()).moved, 1, 'due once the Redis clock reaches runAt');
    });
  }
});
