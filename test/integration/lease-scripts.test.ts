/**
 * The sweeper's and the fan-out's scripts through their typed wrappers (lib/engine/scripts.ts):
 * every reply code, and wakeSweeper taking its clock in ARGV[1] like every other script.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Redis } from 'ioredis';
import { useRedisServer } from '../support/redis';
import { FANOUT_MARK, LEASE, WAKE, sweeperKeys, run, scripts as script } from '../../lib/testing';

const HORIZON = 60_000;
const FIXED = Date.UTC(2040, 0, 1); // far from the Redis clock, so a reply shows which clock the script read

describe('sweeper and fan-out scripts (real redis-server)', () => {
  const server = useRedisServer();
  const k = sweeperKeys();
  const lease = [k.lease, k.next, k.wake, k.wakes] as const;

  // the sweeper's keys are one set per deployment: each test gets a Redis db of its own
  async function isolated(fn: (r: Redis) => Promise<void>): Promise<void> {
    const db = new Redis(server.server().url, { db: 1 + Math.floor(Math.random() * 14) });
    try {
      await db.flushdb();
      await fn(db);
    } finally {
      db.disconnect();
    }
  }

  it('wakeSweeper reads "now" from ARGV[1]: the fixed clock when given, else Redis TIME', () =>
    isolated(async (r) => {
      const wake = (clock: script.ClockArg, dueAt: number | 'now') =>
        run(r, script.wakeSweeper(lease, { clock, dueAt, horizonMs: HORIZON }));
      assert.equal(await wake(FIXED, FIXED + HORIZON), WAKE.START_SWEEPER, 'due within the horizon of the fixed clock');
      assert.equal(await wake(FIXED, FIXED + HORIZON + 1), WAKE.NOTHING, 'past the horizon: the tick will see it');
      assert.equal(await wake('', FIXED), WAKE.NOTHING, 'on Redis TIME the same job is years ahead');
      assert.equal(await wake(FIXED, 'now'), WAKE.START_SWEEPER);
      assert.equal(await wake('', 'now'), WAKE.START_SWEEPER);
      assert.equal(await r.exists(k.wake), 0, 'nothing is written while no sweeper runs');
    }));

  it('wakeSweeper wakes a running sweeper only when it plans to look later than the job is due', () =>
    isolated(async (r) => {
      assert.equal(
        await run(r, script.holdLease(lease, { owner: 'me', leaseMs: 30_000, nextAt: FIXED + 5000, clearWake: true })),
        0,
      );
      const wake = (dueAt: number) => run(r, script.wakeSweeper(lease, { clock: FIXED, dueAt, horizonMs: HORIZON }));
      assert.equal(await wake(FIXED + 5000), WAKE.NOTHING, 'it looks at that time anyway');
      assert.equal(await wake(FIXED + 4000), WAKE.WOKEN);
      assert.deepEqual(await r.lrange(k.wake, 0, -1), [String(FIXED + 4000)]);
      assert.equal(await r.get(k.wakes), '1');
    }));

  it('holdLease and releaseLease: the wake counter, NOT_OWNER, KEPT and RELEASED', () =>
    isolated(async (r) => {
      const hold = (owner: string) =>
        run(r, script.holdLease(lease, { owner, leaseMs: 30_000, nextAt: null, clearWake: true }));
      const release = (owner: string, wakesSeen: number, force = false) =>
        run(r, script.releaseLease(lease, { owner, wakesSeen, force }));
      const seen = await hold('me');
      assert.equal(seen, 0);
      assert.equal(await hold('other'), LEASE.NOT_OWNER);
      await run(r, script.wakeSweeper(lease, { clock: '', dueAt: 'now', horizonMs: HORIZON }));
      assert.equal(await release('me', seen), LEASE.KEPT, 'woken since its sweep began');
      assert.equal(await release('other', seen), LEASE.NOT_OWNER);
      assert.equal(await hold('me'), seen + 1);
      assert.equal(await release('me', seen, true), LEASE.RELEASED, 'force releases whatever happened');
      assert.equal(await r.exists(k.lease), 0);
    }));

  it('startFanout and endFanout: MARKED, ALREADY_RUNNING, CLEARED and NOT_OURS', () =>
    isolated(async (r) => {
      const mark = [k.fanout] as const;
      assert.equal(await run(r, script.startFanout(mark, { token: 'a', markMs: 30_000 })), FANOUT_MARK.MARKED);
      assert.equal(await run(r, script.startFanout(mark, { token: 'b', markMs: 30_000 })), FANOUT_MARK.ALREADY_RUNNING);
      assert.equal(await run(r, script.endFanout(mark, { token: 'b' })), FANOUT_MARK.NOT_OURS);
      assert.equal(await run(r, script.endFanout(mark, { token: 'a' })), FANOUT_MARK.CLEARED);
      assert.equal(await r.exists(k.fanout), 0);
    }));
});
