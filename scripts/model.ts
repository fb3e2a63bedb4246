/**
 * Long model runs (test/integration/model/runner.ts): seeds one after another, each on
 * redis-servers of its own (started and stopped by PID), with the faults asked for.
 *
 *   node --import tsx --import ./test/support/lua-loader.mjs scripts/model.ts \
 *     --steps 1000000 --seed-from 1 --seeds 10 [--faults drops,failover,restart] [--partitions 2]
 *
 * `--steps` is per seed. Prints each seed's steps, time and steps/s, and the seed and step of any
 * violation with the tail of its operation history; exits 1 when a seed found a violation.
 * `--faults none` runs without faults; the default is all three. `--tolerate-listings` reports a
 * listing violation and goes on (to look past a known listing bug for others).
 */
import { parseArgs } from 'node:util';
import { runModel, type Faults } from '../test/integration/model/runner';

const { values } = parseArgs({
  options: {
    steps: { type: 'string', default: '10000' },
    'seed-from': { type: 'string', default: '1' },
    seeds: { type: 'string', default: '1' },
    faults: { type: 'string', default: 'drops,failover,restart' },
    partitions: { type: 'string', default: '2' },
    verbose: { type: 'boolean', default: false },
    'tolerate-listings': { type: 'boolean', default: false },
  },
});

const steps = Number(values.steps);
const from = Number(values['seed-from']);
const seeds = Number(values.seeds);
const names = values.faults === 'none' ? [] : values.faults!.split(',').map((f) => f.trim());
for (const n of names)
  if (!['drops', 'failover', 'restart'].includes(n))
    throw new Error(`unknown fault ${n} (drops, failover, restart, or none)`);
const faults: Faults = {
  drops: names.includes('drops'),
  failover: names.includes('failover'),
  restart: names.includes('restart'),
};

async function main(): Promise<number> {
  const started = Date.now();
  let total = 0;
  const failed: string[] = [];
  console.log(
    `model runs: seeds ${from}..${from + seeds - 1}, ${steps} steps each, faults ${names.join(',') || 'none'}, ${values.partitions} partitions`,
  );
  for (let seed = from; seed < from + seeds; seed++) {
    const result = await runModel({
      seed,
      steps,
      faults,
      partitions: Number(values.partitions),
      tolerateListings: values['tolerate-listings'],
      ...(values.verbose
        ? { log: (line: string) => console.log(line) }
        : { log: (line: string) => /hold|failover|restart/.test(line) || console.log(line) }),
    });
    total += result.steps;
    const rate = result.steps / (result.ms / 1000);
    const counts = Object.entries(result.counts)
      .map(([k, v]) => `${k} ${v}`)
      .join(', ');
    for (const t of result.tolerated.slice(0, 3))
      console.log(`seed ${seed}: listing violation at step ${t.step} (gone on): ${t.detail}`);
    if (result.tolerated.length > 3)
      console.log(`seed ${seed}: ... ${result.tolerated.length} listing violations in all`);
    if (result.violation) {
      failed.push(`seed ${seed} step ${result.violation.step} [${result.violation.invariant}]`);
      console.log(
        `seed ${seed}: VIOLATION at step ${result.violation.step} after ${(result.ms / 1000).toFixed(1)} s (${rate.toFixed(0)} steps/s)\n${result.violation.message}`,
      );
    } else
      console.log(
        `seed ${seed}: ok, ${result.steps} steps in ${(result.ms / 1000).toFixed(1)} s, ${rate.toFixed(0)} steps/s (${counts})`,
      );
  }
  const secs = (Date.now() - started) / 1000;
  console.log(
    `${total} steps in ${secs.toFixed(1)} s: ${(total / secs).toFixed(0)} steps/s; ${failed.length} of ${seeds} seeds found a violation${failed.length ? ': ' + failed.join('; ') : ''}`,
  );
  return failed.length > 0 ? 1 : 0;
}

// Ctrl-C: exit, so that the redis-servers started are killed by PID on the way out (scripts/support/process.ts
// killOnExit)
for (const signal of ['SIGINT', 'SIGTERM'] as const) process.once(signal, () => process.exit(130));

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    console.error(error);
    process.exit(2);
  },
);
