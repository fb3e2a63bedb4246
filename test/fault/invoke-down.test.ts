/**
 * Scenario 3: the Lambda invoke API unreachable for 10 s (the endpoint's port closed). The
 * sweeper cannot invoke the fan-out (its mark is cleared, it tries again on the next sweep), a
 * running fan-out's handler invokes fail (the jobs are released), wake-ups and ticks are lost.
 * When the API is back, everything flows again. Every accepted job must be delivered.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { report } from './support/harness';
import { Stack } from './support/stack';

describe('scenario 3: invoke API unavailable for 10 s', () => {
  const stack = new Stack();
  before(() => stack.start());
  after(() => stack.stop());

  it('releases or times out the affected jobs; none lost', async (t) => {
    let producing = true;
    const producer = (async () => {
      while (producing) {
        await stack.add(Math.random() * 2, 's3');
        await sleep(30);
      }
    })();
    await sleep(3000);
    const port = stack.router.port;
    await stack.router.close();
    const downAt = stack.recorder.deliveries.length;
    await sleep(10_000);
    const duringOutage = stack.recorder.deliveries.length - downAt;
    await stack.router.open(port);
    await sleep(3000);
    producing = false;
    await producer;
    const result = await stack.settle('3 invoke API down 10 s', 60_000, { deliveriesDuringOutage: duringOutage });
    report(result);
    t.diagnostic(JSON.stringify(result));
    assert.equal(result.missing, 0, `missing: ${result.missingIds.join(', ')}\n${stack.output()}`);
  });
});
