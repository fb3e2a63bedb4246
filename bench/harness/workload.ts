/** The workload `bench:flow -- cheap` and `bench:instructions` both run: add, sweep, claim + start + ack. */
import { setTimeout as sleep } from 'node:timers/promises';
import type { Engine, NewJob } from '../../lib/engine';

export type CyclePhase = 'add' | 'sweep' | 'claim, start, ack';

/**
 * Adds `jobs` in calls of `per` (32 in flight when `per` is 1, else one at a time; throws if any
 * is refused), sweeps until nothing more is due, then claims `per` at a time, starts and acks what
 * each claim got, until all are acked; `phase(name)` after each of the three.
 */
export async function addSweepClaimAck(
  engine: Engine,
  topic: string,
  jobs: readonly NewJob[],
  per: number,
  phase: (name: CyclePhase) => void = () => {},
): Promise<void> {
  const inFlight = per === 1 ? 32 : 1;
  let next = 0;
  await Promise.all(
    Array.from({ length: inFlight }, async () => {
      while (next < jobs.length) {
        const from = next;
        next += per;
        const { results } = await engine.write(jobs.slice(from, from + per), 'add', 'bench');
        const refused = results.find((r) => r.status !== 'created');
        if (refused) throw new Error(`add refused: ${refused.status} ${JSON.stringify(refused.job?.id)}`);
      }
    }),
  );
  phase('add');
  for (let r = await engine.sweep(); r.more; r = await engine.sweep());
  phase('sweep');
  let left = jobs.length;
  await Promise.all(
    Array.from({ length: inFlight }, async () => {
      while (left > 0) {
        const claimed = await engine.claim(topic, per);
        if (claimed.length === 0) {
          await sleep(1);
          continue;
        }
        left -= claimed.length;
        await engine.start(topic, claimed);
        await Promise.all(claimed.map((j) => engine.ack(topic, j.id, j)));
      }
    }),
  );
  phase('claim, start, ack');
}
