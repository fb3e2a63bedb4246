/**
 * Scenario 1: the sweeper's process is SIGKILLed 50 times while jobs fall due. Kills land at
 * random moments (mid-sweep, mid-sleep on the wake list, mid-handover) and, every third time, at
 * the exact moment the sweeper invokes the fan-out (after moveDue made jobs ready, before the
 * invoke is accepted). A killed sweeper's lease (shortened to 2 s here; 30 s in production)
 * expires and the next tick or wake-up starts a new one. Every accepted job must be delivered.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { report, until } from './support/harness';
import { Stack } from './support/stack';

const KILLS = Number(process.env.FAULT_KILLS ?? 50);

describe('scenario 1: sweeper killed with SIGKILL at random points', () => {
  const stack = new Stack({ tickMs: 2000 });
  before(() => stack.start());
  after(() => stack.stop());

  it(`loses no job through ${KILLS} kills`, async (t) => {
    const seed = Number(process.env.FAULT_SEED ?? Date.now() % 1_000_000);
    let state = seed;
    const random = () => (state = (state * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
    t.diagnostic(`seed ${seed} (FAULT_SEED=${seed} repeats the kill times)`);

    let producing = true;
    const producer = (async () => {
      while (producing) {
        await stack.add(random() * 3, 's1');
        await sleep(40);
      }
    })();

    const kinds = { random: 0, atFanoutInvoke: 0 };
    for (let i = 0; i < KILLS; i++) {
      if (i % 3 === 2) {
        // between moveDue and the fan-out invoke: the router kills the caller before accepting
        let fired = false;
        stack.router.onInvoke = (name) => {
          if (name !== 'fanout' || fired) return { action: 'deliver' };
          fired = true;
          return { action: 'fault', run: async () => void (await stack.sweeper.restart()) };
        };
        const end = Date.now() + 4000;
        while (!fired && Date.now() < end) await sleep(20);
        stack.router.onInvoke = () => ({ action: 'deliver' });
        if (fired) {
          kinds.atFanoutInvoke += 1;
          await sleep(100);
          continue;
        }
      }
      await sleep(50 + random() * 650);
      await stack.sweeper.restart();
      kinds.random += 1;
    }
    // the adds go on until more than 500 were accepted: a busy machine makes fewer in the kill loop
    await until(() => stack.ledger.size > 500, 120_000, 50);
    producing = false;
    await producer;

    const result = await stack.settle('1 sweeper SIGKILL x' + KILLS, 60_000, {
      kills: stack.sweeper.restarts,
      ...kinds,
      addErrors: stack.addErrors,
    });
    report(result);
    t.diagnostic(JSON.stringify(result));
    assert.equal(result.missing, 0, `missing jobs: ${result.missingIds.join(', ')}\n${stack.output()}`);
    assert.ok(result.accepted > 500, `only ${result.accepted} jobs were accepted`);
    assert.equal(stack.sweeper.restarts, KILLS);
  });
});
