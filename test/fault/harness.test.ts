/**
 * The fault harness itself: a host slot restarted by two parties at once (the random killer and
 * the kill at the fan-out invoke, in scenario 1) must not lose track of a host, or a host left
 * alive keeps the test process open forever (its pipes hold the event loop).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { HostSlot, lambdaEnv } from './support/harness';

const gone = (pid: number) => {
  try {
    process.kill(pid, 0);
    return false;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'ESRCH';
  }
};

describe('fault harness: host slots', () => {
  it('overlapping restarts are serialized, and stop() kills every host the slot started', async () => {
    // the hosts need no Redis to start: they connect lazily, at the first invocation
    const slot = new HostSlot(['sweeper'], lambdaEnv('redis://127.0.0.1:1', 'http://127.0.0.1:1'));
    const first = await slot.start();
    const restarted = await Promise.all([slot.restart(), slot.restart(), slot.restart()]);
    const pids = [first.pid, ...restarted.map((h) => h.pid)];
    assert.equal(new Set(pids).size, 4, 'every restart started a host of its own');
    assert.equal(slot.restarts, 3);
    assert.deepEqual(
      pids.slice(0, 3).filter((pid) => !gone(pid)),
      [],
      'each restart killed the host before it',
    );
    await slot.stop();
    assert.deepEqual(
      pids.filter((pid) => !gone(pid)),
      [],
      'no host of the slot is alive after stop()',
    );
    assert.equal(slot.alive(), 0);
  });
});
