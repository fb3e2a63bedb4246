/**
 * The wait that `npm run dev` and every test harness use for serverless offline
 * (waitWhileProgressing): a child that prints or uses CPU is waited for however long it takes; one
 * that does neither (a hang) fails after the stall time, with its output.
 */
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { groupGone, stopChild, waitWhileProgressing } from '../../scripts/support/process';
import { startOffline } from '../support/offline';

const hasProc = existsSync('/proc/self/stat');
const children: ChildProcess[] = [];

/** Spawns `args` detached (its own process group, as offline is), counting when it last printed. */
function child(args: string[]): { pgid: number; lastOutputAt: () => number; exited: () => boolean } {
  const proc = spawn(args[0]!, args.slice(1), { detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  children.push(proc);
  let lastOutputAt = Date.now();
  for (const stream of [proc.stdout!, proc.stderr!]) stream.on('data', () => (lastOutputAt = Date.now()));
  return {
    pgid: proc.pid!,
    lastOutputAt: () => lastOutputAt,
    exited: () => proc.exitCode !== null || proc.signalCode !== null,
  };
}

describe('waitWhileProgressing: waits while the child prints or uses CPU, fails when it does neither', () => {
  after(async () => {
    await Promise.all(children.map((c) => stopChild(c, { group: true, graceMs: 1000 })));
  });

  it('a child that prints nothing and uses no CPU is a hang: stalled after the stall time', async () => {
    const hung = child(['sleep', '600']);
    const outcome = await waitWhileProgressing({
      pgid: hung.pgid,
      stallMs: 1000,
      lastOutputAt: hung.lastOutputAt,
      ready: () => false,
      everyMs: 50,
    });
    assert.equal(outcome.result, 'stalled');
    assert.ok(
      outcome.result === 'stalled' && outcome.idleMs > 1000 && outcome.elapsedMs < 10_000,
      JSON.stringify(outcome),
    );
  });

  it(
    'a child that only uses CPU (prints nothing) for three stall times is waited for',
    { skip: !hasProc && 'no /proc: only output counts' },
    async () => {
      const busy = child([process.execPath, '-e', 'const end = Date.now() + 3000; while (Date.now() < end);']);
      const outcome = await waitWhileProgressing({
        pgid: busy.pgid,
        stallMs: 1000,
        lastOutputAt: busy.lastOutputAt,
        ready: busy.exited,
        everyMs: 50,
      });
      assert.equal(outcome.result, 'ready', JSON.stringify(outcome));
      assert.ok(outcome.elapsedMs >= 2500, `it waited the whole run (${outcome.elapsedMs} ms)`);
    },
  );

  it('a child that prints now and then (nearly no CPU) for three stall times is waited for', async () => {
    const talking = child(['sh', '-c', 'for i in 1 2 3 4 5 6 7 8 9 10; do echo "$i"; sleep 0.3; done']);
    const outcome = await waitWhileProgressing({
      pgid: talking.pgid,
      stallMs: 1000,
      lastOutputAt: talking.lastOutputAt,
      ready: talking.exited,
      everyMs: 50,
    });
    assert.equal(outcome.result, 'ready', JSON.stringify(outcome));
    assert.ok(outcome.elapsedMs >= 2500, `it waited the whole run (${outcome.elapsedMs} ms)`);
  });

  it('gives up after the limit even while the child works, and stops at once when told to', async () => {
    const busy = child([process.execPath, '-e', 'for (;;);']);
    const overtime = await waitWhileProgressing({
      pgid: busy.pgid,
      stallMs: 60_000,
      limitMs: 500,
      lastOutputAt: busy.lastOutputAt,
      ready: () => false,
      everyMs: 50,
    });
    assert.equal(overtime.result, 'overtime');
    const aborted = await waitWhileProgressing({
      pgid: busy.pgid,
      stallMs: 60_000,
      lastOutputAt: busy.lastOutputAt,
      ready: () => false,
      abort: () => 'it exited',
    });
    assert.deepEqual([aborted.result, aborted.result === 'aborted' && aborted.reason], ['aborted', 'it exited']);
  });

  it('counts CPU from the readings it is given: none growing is a stall even while ready throws', async () => {
    const outcome = await waitWhileProgressing({
      pgid: 1,
      stallMs: 300,
      lastOutputAt: () => 0,
      cpuTicks: () => 7,
      everyMs: 20,
      ready: () => {
        throw new Error('not yet');
      },
    });
    assert.equal(outcome.result, 'stalled');
  });
});

describe('startOffline facing a hung serverless offline', () => {
  it('fails once offline has printed nothing and used no CPU for the stall time, with its output, and leaves no process behind', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'dq-hang-'));
    try {
      // loaded before serverless: prints one line, notes its PID, then blocks without CPU for good
      const hang = join(dir, 'hang.cjs');
      writeFileSync(
        hang,
        `require('fs').writeFileSync(${JSON.stringify(join(dir, 'pid'))}, String(process.pid));\nprocess.stdout.write('about to hang\\n', () => Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0));\n`,
      );
      const started = Date.now();
      await assert.rejects(
        startOffline({ redisUrl: 'redis://127.0.0.1:1', stallMs: 1500, env: { NODE_OPTIONS: `--require ${hang}` } }),
        (error: Error) => {
          assert.match(error.message, /printed nothing and used no CPU for \d+\.\d s \(a hang/);
          assert.match(error.message, /Its output:\nabout to hang\n/);
          return true;
        },
      );
      assert.ok(Date.now() - started < 30_000, 'it gave up after the stall time, not after a long timeout');
      const pid = Number(readFileSync(join(dir, 'pid'), 'utf8'));
      assert.equal(groupGone(pid), true, 'the hung process group was stopped');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
