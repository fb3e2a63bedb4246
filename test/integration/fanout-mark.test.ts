/**
 * The fan-out's mark (one fan-out at a time) is cleared however the fan-out ends: a fan-out whose
 * clearing call fails (a TRYAGAIN or MOVED while slots move, a dropped connection) must not keep
 * the mark until it expires, or no fan-out runs for that long while jobs fall due.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Redis } from 'ioredis';
import { Engine } from '../../lib/engine';
import type { Invoker } from '../../lib/platform/lambda';
import { createLogger } from '../../lib/platform/log';
import { requestFanout, runFanout } from '../../lib/workers/fanout';
import { makeQueue, uniqueTopic } from '../support/queue';
import { useRedisServer } from '../support/redis';
import { sweeperKeys } from '../../lib/testing';

const log = createLogger('test', {}, 'error', () => undefined);

/** `client` whose first `failures` calls of script `name` fail as Redis does while a slot moves. */
function failingScript(client: Redis, name: string, failures: number): Redis {
  let left = failures;
  return new Proxy(client, {
    get(target, prop, receiver) {
      const value = Reflect.get(target, prop, receiver) as unknown;
      if (prop === `dq_${name}` && typeof value === 'function' && left > 0) {
        return () => {
          left -= 1;
          return Promise.reject(new Error('TRYAGAIN Multiple keys request during rehashing of slot'));
        };
      }
      return value;
    },
  });
}

describe('the fan-out mark (real redis-server)', () => {
  const server = useRedisServer();

  it('is cleared when the fan-out fails to clear it at first', async () => {
    // the mark is one per deployment
    const db = new Redis(server.server().url, { db: 1 + Math.floor(Math.random() * 14) });
    try {
      await db.flushdb();
      const topic = uniqueTopic('mark');
      const queue = makeQueue(db, { [topic]: { handler: 'h' } });
      await queue.add({ topic, id: 'a', delay: 0 });
      await queue.engine.sweep();
      const calls: { name: string; payload: unknown }[] = [];
      const invoker: Invoker = { invokeAsync: async (name, payload) => void calls.push({ name, payload }) };
      assert.equal(await requestFanout({ engine: queue.engine, invoker }), true);
      const { token } = calls.find((c) => c.name === 'fanout')!.payload as { token: string };

      const flaky = new Engine(failingScript(db, 'endFanout', 2), queue.engine.config);
      await runFanout({ engine: flaky, invoker, log }, { token }).catch(() => undefined);
      assert.equal(await db.exists(sweeperKeys().fanout), 0, 'the mark is gone once the fan-out has ended');
      assert.equal(await requestFanout({ engine: queue.engine, invoker }), true, 'the next fan-out is invoked at once');
    } finally {
      db.disconnect();
    }
  });
});
