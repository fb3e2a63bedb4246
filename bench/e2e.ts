/**
 * End-to-end lateness benchmark (not a test): `npm run bench:e2e`.
 *
 * Starts a redis-server and `serverless offline` (stage local), warms the functions up, then adds
 * N jobs (default 2,000) to the `example` topic (a no-op handler) with due times spread evenly over
 * S seconds (default 20), through the HTTP API in batches. Lateness is handler start − runAt,
 * read from each handler's "job started" log line (both clocks are this machine's). Reports
 * p50 / p99 / max, duplicates (a job started more than once), missing (never started), and the
 * cold starts during the measured run (from the functions' `cold_start` log field).
 *
 * Warm-up: three rounds of 100 jobs run every function on the job path; then W (default 6) workers
 * each of the handler and the fan-out, and 3 of the sweeper, are started by invoking them at once
 * (the handler with a job that is not there, which it looks up and does not run; the fan-out on
 * the example topic, where nothing is ready then). serverless offline starts a
 * worker, a cold start of a few hundred ms of both CPUs here, whenever a function is invoked while
 * its warm workers are busy; a stack under steady traffic has its warm instances. The cold starts
 * that still happen during the run are counted and printed, so a tail they cause shows as such.
 *
 * BENCH_E2E_JOBS, BENCH_E2E_SPREAD_S override N and S; BENCH_E2E_WARM overrides W (0: no workers
 * started beyond the three rounds').
 */
import { cpus } from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import { invokeFunction, startOffline, type OfflineProcess } from '../test/support/offline';
import { envNumber } from './harness/env';
import { runBench, track } from './harness/lifecycle';
import { quantile, sortNum } from './harness/measure';
import { startServer } from './harness/redis';
import { printJson } from './harness/report';

const JOBS = envNumber('BENCH_E2E_JOBS', 2000);
const SPREAD_S = envNumber('BENCH_E2E_SPREAD_S', 20);
const WARM = envNumber('BENCH_E2E_WARM', 6);
const WARM_SOURCE = 'bench warm-up';
const LEAD_MS = 3000; // first job due this long after the adds start, so adding never makes a job late

/** A request to the stack's HTTP API with its deployment key; the answer's status and JSON body. */
async function api(offline: OfflineProcess, method: string, path: string, body?: unknown) {
  const res = await fetch(offline.baseUrl + path, {
    method,
    headers: { authorization: `Bearer ${offline.token}`, 'content-type': 'application/json' },
    ...(body ? { body: JSON.stringify(body) } : {}),
  });
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- the JSON answer of any endpoint; the benchmark reads the fields it needs
  return { status: res.status, body: (await res.json()) as any };
}

/** Jobs delayed, ready or running, over every topic. */
async function pending(offline: OfflineProcess): Promise<number> {
  const { body } = await api(offline, 'GET', '/topics');
  return (body.topics as { delayed: number; ready: number; running: number }[]).reduce(
    (n, t) => n + t.delayed + t.ready + t.running,
    0,
  );
}

/** `n` invokes of function `name` at once, with `payload(i)`; throws unless each succeeds. */
const invokeAtOnce = (
  offline: OfflineProcess,
  name: string,
  payload: (i: number) => unknown,
  n: number,
  type: 'RequestResponse' | 'Event' = 'RequestResponse',
) =>
  Array.from({ length: n }, async (_, i) => {
    const r = await invokeFunction(offline.lambdaUrl, name, payload(i), type);
    if (r.status >= 300 || r.functionError)
      throw new Error(`warm-up invoke of ${name} failed: ${r.status} ${JSON.stringify(r.body)}`);
  });

/** A handler event for a job that is not there: the handler looks it up and does not run it. */
function missingJob(i: number) {
  const now = Date.now();
  const job = { id: `warm-up-missing-${i}`, body: null, attempt: 1, maxAttempts: 1, runAt: now };
  return { topic: 'example', jobs: [{ ...job, deadline: now + 60_000, claimedAt: now, claim: 'warm-up' }] };
}

/** Warm-up: start every function and several handler workers, as a deployed stack would be. */
async function warmUp(offline: OfflineProcess): Promise<void> {
  for (let round = 0; round < 3; round++) {
    const jobs = Array.from({ length: 100 }, (_, i) => ({ topic: 'example', id: `warm-${round}-${i}`, delay: 0.5 }));
    await api(offline, 'POST', '/jobs/batch', { jobs });
    while ((await pending(offline)) > 0) await sleep(200);
  }
  // Warm workers: W of the handler and of the fan-out, 3 of the sweeper (a self-rescheduling one
  // invokes its successor before it ends), each invoked at once while the others are busy. The
  // handler is sent a job that is not there: its start finds none (logged, not run); the fan-out
  // claims from the example topic, where nothing is ready: each worker has opened its Redis
  // connection and run its scripts before the run.
  await Promise.all([
    ...invokeAtOnce(offline, 'exampleHandler', missingJob, WARM),
    ...invokeAtOnce(offline, 'fanout', () => ({ topics: ['example'] }), WARM),
    ...invokeAtOnce(offline, 'sweeper', () => ({ source: WARM_SOURCE }), Math.min(WARM, 3), 'Event'),
  ]);
  while ((await pending(offline)) > 0) await sleep(200);
}

/** Adds the jobs, due evenly over SPREAD_S from `start`, 500 a batch; their ids, and how long adding took. */
async function addJobs(offline: OfflineProcess, start: number): Promise<{ ids: string[]; addMs: number }> {
  const ids: string[] = [];
  const jobs = Array.from({ length: JOBS }, (_, i) => {
    const id = `bench-${i}`;
    ids.push(id);
    return { topic: 'example', id, runAt: start + Math.round((i * SPREAD_S * 1000) / JOBS), body: { i } };
  });
  const addStarted = Date.now();
  for (let i = 0; i < jobs.length; i += 500) {
    const { status, body } = await api(offline, 'POST', '/jobs/batch', { jobs: jobs.slice(i, i + 500) });
    if (status !== 200 || body.results.some((r: { status: number }) => r.status !== 201))
      throw new Error(`batch add failed: ${status}`);
  }
  const addMs = Date.now() - addStarted;
  if (Date.now() > start) console.warn(`warning: adding took ${addMs} ms, past the first due time`);
  return { ids, addMs };
}

/**
 * Cold starts during the run: invocations (request ids) whose log lines say cold_start, by function, but for those
 * begun before `runStartMs` (the line's time less the invocation's Duration, which offline prints: a sweeper an add of
 * the warm-up woke runs on into the run and logs only at its end).
 */
function coldStartsIn(logs: string, runStartMs: number): Record<string, number> {
  const durations = new Map(
    [...logs.matchAll(/RequestId: (\S+)\s+Duration: ([\d.]+) ms/g)].map((m) => [m[1]!, Number(m[2])]),
  );
  const cold = new Map<string, Set<string>>();
  for (const line of logs.split('\n')) {
    if (!line.startsWith('{') || !line.includes('"cold_start":true')) continue;
    const entry = JSON.parse(line) as {
      function_name?: string;
      function_request_id?: string;
      source?: string;
      timestamp?: string;
    };
    if (entry.source === WARM_SOURCE) continue; // a warm-up sweeper (an Event invoke) that logged after the warm-up
    const id = entry.function_request_id ?? line;
    const began = Date.parse(entry.timestamp ?? '') - (durations.get(id) ?? 0);
    if (began < runStartMs) continue;
    const name = (entry.function_name ?? '?').replace(/^delay-queue-local-/, '');
    cold.set(name, (cold.get(name) ?? new Set()).add(id));
  }
  return Object.fromEntries([...cold].map(([name, ids]) => [name, ids.size]));
}

/** Every bench job's starts, by id: the lateness each "job started" log line says. */
function startsIn(logs: string): Map<string, number[]> {
  const starts = new Map<string, number[]>();
  for (const line of logs.split('\n')) {
    if (!line.startsWith('{') || !line.includes('"job started"')) continue;
    const entry = JSON.parse(line) as { jobId: string; startLatenessMs: number };
    if (!entry.jobId.startsWith('bench-')) continue;
    starts.set(entry.jobId, [...(starts.get(entry.jobId) ?? []), entry.startLatenessMs]);
  }
  return starts;
}

function report(
  ids: readonly string[],
  starts: Map<string, number[]>,
  coldStarts: Record<string, number>,
  addMs: number,
) {
  const lateness = sortNum(ids.flatMap((id) => (starts.get(id)?.[0] !== undefined ? [starts.get(id)![0]!] : [])));
  const missing = ids.filter((id) => !starts.has(id)).length;
  const duplicates = [...starts.values()].filter((s) => s.length > 1).length;
  const result = {
    jobs: JOBS,
    spreadSeconds: SPREAD_S,
    latenessMs: {
      p50: quantile(lateness, 0.5),
      p90: quantile(lateness, 0.9),
      p99: quantile(lateness, 0.99),
      max: lateness.at(-1) ?? NaN,
      min: lateness[0] ?? NaN,
    },
    missing,
    duplicates,
    warmWorkers: WARM,
    coldStarts,
    addMs,
    machine: { cpus: cpus().length, cpu: cpus()[0]?.model, node: process.version },
  };
  console.log('');
  console.log(`jobs ${JOBS} due over ${SPREAD_S} s (example topic, no-op handler), through serverless offline`);
  console.log(
    `lateness (handler start − runAt): p50 ${result.latenessMs.p50} ms  p90 ${result.latenessMs.p90} ms  p99 ${result.latenessMs.p99} ms  max ${result.latenessMs.max} ms`,
  );
  console.log(
    `missing ${missing}  duplicates ${duplicates}  (goals: p99 ≤ 50 ms, max ≤ 250 ms, 0 missing, 0 duplicates)`,
  );
  const coldList = Object.entries(coldStarts).map(([name, n]) => `${name} ${n}`);
  console.log(
    `cold starts during the run (${WARM} warm workers of the handler and fan-out started first): ${coldList.length ? coldList.join(', ') : 'none'}`,
  );
  printJson(result);
}

async function main(): Promise<void> {
  const redis = await startServer();
  const offline = await startOffline({
    redisUrl: redis.url,
    env: { LOG_LEVEL: 'info' },
    maxLogBytes: 256 * 1024 * 1024,
  });
  const stopOffline = track(() => offline.stop());
  try {
    console.log(`serverless offline ready in ${offline.startupMs} ms; warming up`);
    await warmUp(offline);
    const logsBefore = offline.logs().length;
    const runStartMs = Date.now();
    const start = Date.now() + LEAD_MS;
    const { ids, addMs } = await addJobs(offline, start);
    const waitUntil = start + SPREAD_S * 1000 + 60_000;
    while ((await pending(offline)) > 0 && Date.now() < waitUntil) await sleep(500);
    await sleep(2000); // let the last log lines arrive
    if (process.env.BENCH_E2E_LOG) (await import('node:fs')).writeFileSync(process.env.BENCH_E2E_LOG, offline.logs());
    report(ids, startsIn(offline.logs()), coldStartsIn(offline.logs().slice(logsBefore), runStartMs), addMs);
  } finally {
    await stopOffline();
    await redis.stop();
  }
}

runBench(main, { forceExit: true });
