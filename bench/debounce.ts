/**
 * Debounce benchmark (not a test): a burst of adds of one debounce key through the whole stack, with a ledger. Starts
 * its own redis-server (nothing persisted) and runs the API's add, the sweeper, the fan-out and a topic handler in this
 * process (bench/harness/roles.ts, as bench:steady does).
 *
 *   npm run bench:debounce
 *   BENCH_ADDS=10000 BENCH_SECONDS=30 BENCH_PERIOD_MS=1000 BENCH_MAX_WAIT_MS=5000 npm run bench:debounce
 *
 * BENCH_ADDS adds of one key over BENCH_SECONDS, one a request, in streams of 0.5 to 8 s (adds evenly spread within
 * one) between quiet spells of 1.2 to 2.5 periods, so that some jobs end on a quiet period and some on the maximum
 * wait. Each add's body is its sequence number. The ledger holds each add's answer (created or debounced, the job's
 * id, its runAt and the add's time on the Redis clock) and each run (the job's id, its body, its start on the Redis
 * clock). Checked from it: the runs the debounce rule gives for the adds' Redis times (a new job when an add comes at
 * or after the due time of the one before; due = min(last add + period, first add + max wait)) against the runs that
 * happened: one run per job, none missing or twice, each with the body of the last add folded into its job, each
 * started after its due time by at most the lateness reported (p50 / p99 / max). One table and one JSON line.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { Engine, type Caller } from '../lib/engine';
import { jobService } from '../lib/api/job-routes';
import { envInt } from './harness/env';
import { runBench } from './harness/lifecycle';
import { quantileFloor } from './harness/measure';
import { inProcessRoles, type Roles } from './harness/roles';
import { connect, startServer } from './harness/redis';
import { fmt, machineOf, printJson, printTable } from './harness/report';

const PRODUCER: Caller = { name: 'bench', scope: 'write', topics: null };
const N = {
  adds: envInt('BENCH_ADDS', 10_000),
  seconds: envInt('BENCH_SECONDS', 30),
  periodMs: envInt('BENCH_PERIOD_MS', 1_000),
  maxWaitMs: envInt('BENCH_MAX_WAIT_MS', 5_000),
};
const TOPIC = 'debounced';

/** One add's answer: its sequence number, what it did, the job it named, and its time on the Redis clock. */
interface AddEntry {
  seq: number;
  status: string;
  id: string;
  at: number;
  runAt: number;
}
/** One run: the job, the body (an add's sequence number) and its start on the Redis clock. */
interface RunEntry {
  id: string;
  body: number;
  startedAt: number;
}

/** When each add is sent (ms from the start): streams of adds between quiet spells, BENCH_ADDS in BENCH_SECONDS. */
function plan(): number[] {
  const streams: [start: number, length: number][] = [];
  let t = 0;
  let random = 7; // a fixed sequence: every run sends the same pattern
  const next = () => (random = (random * 48271) % 2147483647) / 2147483647;
  while (t < N.seconds * 1000) {
    const length = Math.min(500 + next() * 7500, N.seconds * 1000 - t);
    streams.push([t, length]);
    t += length + N.periodMs * (1.2 + next() * 1.3);
  }
  const busy = streams.reduce((sum, [, length]) => sum + length, 0);
  return streams.flatMap(([start, length]) => {
    const count = Math.max(1, Math.round((N.adds * length) / busy));
    return Array.from({ length: count }, (_, i) => start + (i * length) / count);
  });
}

/** Sends the adds at their planned times (a late one goes at once); their answers in the ledger. */
async function addAll(engine: Engine, times: readonly number[]): Promise<AddEntry[]> {
  const adds: AddEntry[] = [];
  const t0 = performance.now();
  const debounce = { key: 'user-42', period: N.periodMs / 1000, maxWait: N.maxWaitMs / 1000 };
  for (const [seq, time] of times.entries()) {
    const wait = t0 + time - performance.now();
    if (wait > 0) await sleep(wait);
    const o = await jobService.add(engine, { topic: TOPIC, body: seq, debounce }, PRODUCER);
    if (o.status !== 'created' && o.status !== 'debounced') throw new Error(`add ${seq}: ${o.status}`);
    adds.push({ seq, status: o.status, id: o.job.id, at: Date.parse(o.job.updatedAt), runAt: Date.parse(o.job.runAt) });
  }
  return adds;
}

/** The jobs the debounce rule makes of adds at `adds`' Redis times: each job's adds' sequence numbers and due time. */
function expectedRuns(adds: readonly AddEntry[]): { seqs: number[]; due: number }[] {
  const runs: { seqs: number[]; first: number; due: number }[] = [];
  for (const a of adds) {
    const open = runs.at(-1);
    if (open && a.at < open.due) {
      open.seqs.push(a.seq);
      open.due = Math.min(a.at + N.periodMs, open.first + N.maxWaitMs);
    } else runs.push({ seqs: [a.seq], first: a.at, due: a.at + N.periodMs });
  }
  return runs;
}

/** The ledger checked: the jobs against the rule's, each job's run against its last add and due time. */
function check(adds: readonly AddEntry[], runs: readonly RunEntry[]) {
  const byJob = new Map<string, AddEntry[]>();
  for (const a of adds) byJob.set(a.id, [...(byJob.get(a.id) ?? []), a]);
  const runsOf = new Map<string, RunEntry[]>();
  for (const r of runs) runsOf.set(r.id, [...(runsOf.get(r.id) ?? []), r]);
  const expected = expectedRuns(adds);
  const jobs = [...byJob.values()];
  const sameGroups =
    expected.length === jobs.length && expected.every((e, i) => e.seqs.join() === jobs[i]!.map((a) => a.seq).join());
  let wrongBody = 0;
  const late: number[] = [];
  let maxWaitRuns = 0;
  for (const [id, folded] of byJob) {
    const ran = runsOf.get(id)?.[0];
    const last = folded.at(-1)!;
    if (!ran) continue;
    if (ran.body !== last.seq) wrongBody += 1;
    late.push(ran.startedAt - last.runAt);
    if (last.runAt === folded[0]!.at + N.maxWaitMs) maxWaitRuns += 1;
  }
  late.sort((a, b) => a - b);
  return {
    jobs: byJob.size,
    expectedJobs: expected.length,
    sameGroups,
    runs: runs.length,
    missing: [...byJob.keys()].filter((id) => !runsOf.has(id)).length,
    twice: [...runsOf.values()].filter((r) => r.length > 1).length,
    wrongBody,
    maxWaitRuns,
    quietRuns: byJob.size - maxWaitRuns,
    latenessMs: { p50: quantileFloor(late, 0.5), p99: quantileFloor(late, 0.99), max: late.at(-1) ?? NaN },
  };
}

function startRoles(redisUrl: string, runs: RunEntry[]): Roles {
  return inProcessRoles({
    redisUrl,
    config: { topics: { [TOPIC]: { handler: 'debounceHandler', concurrency: 100 } } },
    engine: (redis, config, options) => new Engine(redis, config, options),
    handlerWakes: false,
    job: async (job, context) => {
      runs.push({ id: job.id, body: job.body as number, startedAt: context.now() });
    },
  });
}

async function main(): Promise<void> {
  const server = await startServer();
  const admin = connect(server);
  let roles: Roles | undefined;
  try {
    const runs: RunEntry[] = [];
    roles = startRoles(server.url, runs);
    const adds = await addAll(roles.rt.engine, plan());
    const ids = new Set(adds.map((a) => a.id));
    const limit = Date.now() + N.maxWaitMs + 60_000;
    while ([...ids].some((id) => !runs.some((r) => r.id === id)) && Date.now() < limit) await sleep(50);
    while (roles.handlers.size > 0) await Promise.all([...roles.handlers]);
    const result = { bench: 'debounce', ...N, addsSent: adds.length, ...check(adds, runs) };
    printTable([
      ['adds of one key', `${fmt(result.addsSent)} over ${N.seconds} s`, ''],
      [
        'jobs (runs the rule gives)',
        `${result.jobs} (${result.expectedJobs}), same adds in each: ${result.sameGroups}`,
        'equal',
      ],
      ['of them ended on a quiet period / on the max wait', `${result.quietRuns} / ${result.maxWaitRuns}`, ''],
      [
        'runs missing / twice / with another body than the last add',
        `${result.missing} / ${result.twice} / ${result.wrongBody}`,
        '0 / 0 / 0',
      ],
      [
        'start after the due time p50 / p99 / max',
        `${fmt(result.latenessMs.p50, 1)} / ${fmt(result.latenessMs.p99, 1)} / ${fmt(result.latenessMs.max, 1)} ms`,
        '',
      ],
    ]);
    printJson({ ...result, machine: await machineOf(admin, server.pid) });
  } finally {
    roles?.rt.redis.disconnect();
    admin.disconnect();
    await server.stop();
  }
}

runBench(main, { forceExit: true });
