/**
 * Scenario 2: the fan-out killed between claim and invoke, and the handler killed mid-job. In
 * both cases the claimed attempt is in the running set with its TTR deadline (2 s here); the
 * sweeper times it out and the job runs again. Every accepted job must be delivered; a handler
 * killed after the webhook was sent but before its ack makes an unavoidable duplicate.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { report } from './support/harness';
import { Stack } from './support/stack';

const KILLS = 10;

/**
 * Adds `count` jobs, one every 25 ms, due within 2 s; then goes on adding until `enough()` (all the
 * kills made: on a busy machine a restart takes longer and lets more jobs pass meanwhile), at most
 * ten times `count` in all.
 */
async function produce(stack: Stack, label: string, count: number, enough: () => boolean): Promise<void> {
  for (let i = 0; i < count || (!enough() && i < 10 * count); i++) {
    await stack.add(Math.random() * 2, label);
    await sleep(25);
  }
}

describe('scenario 2a: fan-out killed between claim and invoke', () => {
  const stack = new Stack();
  before(() => stack.start());
  after(() => stack.stop());

  it('brings the claimed jobs back by their TTR; none lost, none duplicated', async (t) => {
    let kills = 0;
    let busy = false;
    stack.router.onInvoke = (name) => {
      if (name !== 'webhookHandler' || kills >= KILLS || busy) return { action: 'deliver' };
      kills += 1;
      busy = true;
      return {
        action: 'fault',
        run: async () => {
          await stack.fanout.restart();
          busy = false;
        },
      };
    };
    await produce(stack, 's2a', 400, () => kills >= KILLS);
    const result = await stack.settle('2a fan-out SIGKILL between claim and invoke', 60_000);
    result.kills = kills; // counted after the settle: kills go on while jobs come back
    report(result);
    t.diagnostic(JSON.stringify(result));
    assert.equal(stack.fanout.restarts, KILLS);
    assert.equal(result.missing, 0, `missing: ${result.missingIds.join(', ')}\n${stack.output()}`);
  });
});

describe('scenario 2b: handler killed mid-job', () => {
  const stack = new Stack();
  before(() => stack.start());
  after(() => stack.stop());

  it('runs the job again after its TTR; the duplicates are the jobs that were mid-flight', async (t) => {
    let kills = 0;
    let busy = false;
    // mid-job: the webhook request reached the receiver, the handler has not acked it yet
    stack.recorder.hold = (d) => {
      if (kills >= KILLS || busy || d.attempt !== 1 || Number(d.id.split('-')[1]) % 20 !== 0) return false;
      kills += 1;
      busy = true;
      void stack.handler.restart().finally(() => (busy = false));
      return true;
    };
    await produce(stack, 's2b', 400, () => kills >= KILLS);
    const result = await stack.settle('2b handler SIGKILL mid-job', 60_000);
    result.kills = kills; // counted after the settle: kills go on while jobs come back
    report(result);
    t.diagnostic(JSON.stringify(result));
    assert.equal(stack.handler.restarts, KILLS);
    assert.equal(result.missing, 0, `missing: ${result.missingIds.join(', ')}\n${stack.output()}`);
    assert.ok(result.duplicates >= KILLS, 'each held job was delivered again');
  });
});
