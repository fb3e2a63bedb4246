/**
 * Scenario: a schedule firing every 2 s while its sweeper's process is SIGKILLed at random
 * moments (mid-sweep, mid-advance, mid-sleep) and, every third time, at the exact moment it
 * invokes the fan-out (after it moved the due occurrence and advanced the schedule). A killed
 * sweeper's lease (2 s here) expires and the next tick starts a new one. Every occurrence the
 * schedule created must be delivered, each occurrence time is one job (never two), the schedule
 * keeps going after every kill (always one pending occurrence), never more occurrences than run
 * times, and none created later than CATCH_UP_GRACE_MS after its run time: the occurrences a
 * restarted sweeper finds late run in order, and missed ones (older) never come in a burst.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { CATCH_UP_GRACE_MS } from '../../lib/core/schedule';
import { report, until } from './support/harness';
import { Stack } from './support/stack';
import { topicKeys } from '../../lib/testing';

const KILLS = Number(process.env.FAULT_KILLS ?? 12);
const PERIOD_MS = 2000;

describe('scenario: sweeper killed with SIGKILL while a schedule advances', () => {
  const stack = new Stack({ tickMs: 2000 });
  before(() => stack.start());
  after(() => stack.stop());

  it(`neither loses nor doubles an occurrence through ${KILLS} kills`, async (t) => {
    const seed = Number(process.env.FAULT_SEED ?? Date.now() % 1_000_000);
    let state = seed;
    const random = () => (state = (state * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
    t.diagnostic(`seed ${seed} (FAULT_SEED=${seed} repeats the kill times)`);

    const put = await stack.queue.putSchedule('webhook', 'beat', {
      every: PERIOD_MS / 1000,
      url: `${stack.recorder.url}/hook/beat`,
      body: { beat: true },
    });
    const started = Date.parse(put.schedule.pending!.runAt) - PERIOD_MS;
    await stack.tick();

    const kinds = { random: 0, atFanoutInvoke: 0 };
    for (let i = 0; i < KILLS; i++) {
      if (i % 3 === 2) {
        let fired = false;
        stack.router.onInvoke = (name) => {
          if (name !== 'fanout' || fired) return { action: 'deliver' };
          fired = true;
          return { action: 'fault', run: async () => void (await stack.sweeper.restart()) };
        };
        const end = Date.now() + 6000;
        while (!fired && Date.now() < end) await sleep(20);
        stack.router.onInvoke = () => ({ action: 'deliver' });
        if (fired) {
          kinds.atFanoutInvoke += 1;
          await sleep(200);
          continue;
        }
      }
      await sleep(300 + random() * 2200);
      await stack.sweeper.restart();
      kinds.random += 1;
    }
    // recovery: the next tick starts a sweeper, which moves the schedule on
    const killedAt = Date.now();
    await until(
      async () => {
        const s = await stack.queue.getSchedule('webhook', 'beat');
        return s?.lastRunAt !== null && Date.parse(s!.lastRunAt!) > killedAt;
      },
      30_000,
      200,
    );
    const alive = await stack.queue.getSchedule('webhook', 'beat');
    assert.ok(
      alive?.pending && Date.parse(alive.pending.runAt) > killedAt,
      'the schedule kept a pending occurrence through every kill',
    );
    await stack.queue.deleteSchedule('webhook', 'beat');
    const ended = Date.now();

    // the ledger: every occurrence job the schedule created (the withdrawn pending one is gone)
    const ids = (await stack.redis.hkeys(topicKeys(0, 'webhook', 1).jobs))
      .filter((id) => id.startsWith('beat:'))
      .sort();
    const times = ids.map((id) =>
      Date.parse(id.slice(5).replace(/^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z$/, '$1-$2-$3T$4:$5:$6Z')),
    );
    for (const id of ids) stack.ledger.set(id, 0);
    const result = await stack.settle(`schedule: sweeper SIGKILL x${KILLS}`, 60_000, {
      kills: stack.sweeper.restarts,
      ...kinds,
      occurrences: ids.length,
    });
    report(result);
    t.diagnostic(JSON.stringify(result));
    assert.ok(ids.length >= 5, `only ${ids.length} occurrences`);
    assert.equal(
      result.missing,
      0,
      `occurrences created but not delivered: ${result.missingIds.join(', ')}\n${stack.output()}`,
    );
    assert.ok(
      times.every((ms) => Number.isFinite(ms) && ms % PERIOD_MS === 0),
      'every occurrence is a run time of the schedule',
    );
    assert.equal(new Set(times).size, times.length, 'one job per occurrence time');
    // none missed: a killed sweeper is back within seconds (lease and tick 2 s), far within the
    // grace, so the occurrences it finds late all run: every run time from the first to the last
    const gaps = times
      .slice(1)
      .map((ms, i) => ms - times[i]!)
      .filter((d) => d !== PERIOD_MS);
    assert.deepEqual(gaps, [], `run times skipped between the first and the last occurrence: ${ids.join(', ')}`);
    assert.ok(
      ids.length <= Math.ceil((ended - started) / PERIOD_MS) + 1,
      `${ids.length} occurrences in ${ended - started} ms: more than the schedule has run times`,
    );
    // never a burst of missed ones: an occurrence is created before its run time, or late by at
    // most the grace (a restarted sweeper runs the late ones in order; older ones were missed, and
    // catchUp latest creates only the latest of those, at most a period after its run time)
    const jobs = await Promise.all(ids.map((id) => stack.queue.get('webhook', id)));
    jobs.forEach((job, i) => {
      const late = Date.parse(job!.createdAt) - times[i]!;
      assert.ok(late <= CATCH_UP_GRACE_MS, `${job!.id} was created ${late} ms after its run time: missed, yet created`);
    });
    assert.equal(stack.sweeper.restarts, KILLS);
  });
});
