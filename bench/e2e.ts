/**
 * End-to-end lateness benchmark (not a test): `npm run bench:e2e`.
 *
 * Starts a redis-server and `serverless offline` (stage local), warms the functions up, then adds
 * N jobs (default 2,000) to the `example` topic (a no-op handler) with due times spread evenly over
 * S seconds (default 20), through the HTTP API in batches. Lateness is handler start − runAt,
 * read from each handler's "job started" log line (both clocks are this machine's). Reports
 * p50 / p99 / max, duplicates (a job started more than once) and missing (never started).
 *
 * BENCH_E2E_JOBS, BENCH_E2E_SPREAD_S override N and S.
 */
import { cpus } from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import { startOffline } from '../test/support/offline';
import { startRedis } from '../test/support/redis';

const JOBS = Number(process.env.BENCH_E2E_JOBS ?? 2000);
const SPREAD_S = Number(process.env.BENCH_E2E_SPREAD_S ?? 20);
const LEAD_MS = 3000; // first job due this long after the adds start, so adding never makes a job late

function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
}

async function main(): Promise<void> {
  const redis = await startRedis();
  const offline = await startOffline({ redisUrl: redis.url, env: { LOG_LEVEL: 'info' }, maxLogBytes: 256 * 1024 * 1024 });
  const api = async (method: string, path: string, body?: unknown) => {
    const res = await fetch(offline.baseUrl + path, { method, headers: { authorization: `Bearer ${offline.token}`, 'content-type': 'application/json' }, ...(body ? { body: JSON.stringify(body) } : {}) });
    return { status: res.status, body: (await res.json()) as any }; // eslint-disable-line @typescript-eslint/no-explicit-any -- the JSON answer of any endpoint; the benchmark reads the fields it needs
  };
  const pending = async () => {
    const { body } = await api('GET', '/topics');
    return (body.topics as { delayed: number; ready: number; running: number }[]).reduce((n, t) => n + t.delayed + t.ready + t.running, 0);
  };
  try {
    console.log(`serverless offline ready in ${offline.startupMs} ms; warming up`);
    // Warm-up: start every function and several handler workers, as a deployed stack would be.
    for (let round = 0; round < 3; round++) {
      const jobs = Array.from({ length: 100 }, (_, i) => ({ topic: 'example', id: `warm-${round}-${i}`, delay: 0.5 }));
      await api('POST', '/jobs/batch', { jobs });
      while ((await pending()) > 0) await sleep(200);
    }

    const start = Date.now() + LEAD_MS;
    const ids: string[] = [];
    const jobs = Array.from({ length: JOBS }, (_, i) => {
      const id = `bench-${i}`;
      ids.push(id);
      return { topic: 'example', id, runAt: start + Math.round((i * SPREAD_S * 1000) / JOBS), body: { i } };
    });
    const addStarted = Date.now();
    for (let i = 0; i < jobs.length; i += 500) {
      const { status, body } = await api('POST', '/jobs/batch', { jobs: jobs.slice(i, i + 500) });
      if (status !== 200 || body.results.some((r: { status: number }) => r.status !== 201)) throw new Error(`batch add failed: ${status}`);
    }
    const addMs = Date.now() - addStarted;
    if (Date.now() > start) console.warn(`warning: adding took ${addMs} ms, past the first due time`);
    const waitUntil = start + SPREAD_S * 1000 + 60_000;
    while ((await pending()) > 0 && Date.now() < waitUntil) await sleep(500);
    await sleep(2000); // let the last log lines arrive
    if (process.env.BENCH_E2E_LOG) (await import('node:fs')).writeFileSync(process.env.BENCH_E2E_LOG, offline.logs());

    const starts = new Map<string, number[]>();
    for (const line of offline.logs().split('\n')) {
      if (!line.startsWith('{') || !line.includes('"job started"')) continue;
      const entry = JSON.parse(line) as { jobId: string; startLatenessMs: number };
      if (!entry.jobId.startsWith('bench-')) continue;
      starts.set(entry.jobId, [...(starts.get(entry.jobId) ?? []), entry.startLatenessMs]);
    }
    const lateness = ids.flatMap((id) => (starts.get(id)?.[0] !== undefined ? [starts.get(id)![0]!] : [])).sort((a, b) => a - b);
    const missing = ids.filter((id) => !starts.has(id)).length;
    const duplicates = [...starts.values()].filter((s) => s.length > 1).length;
    const result = {
      jobs: JOBS,
      spreadSeconds: SPREAD_S,
      latenessMs: { p50: percentile(lateness, 50), p90: percentile(lateness, 90), p99: percentile(lateness, 99), max: lateness.at(-1) ?? NaN, min: lateness[0] ?? NaN },
      missing,
      duplicates,
      addMs,
      machine: { cpus: cpus().length, cpu: cpus()[0]?.model, node: process.version },
    };
    console.log('');
    console.log(`jobs ${JOBS} due over ${SPREAD_S} s (example topic, no-op handler), through serverless offline`);
    console.log(`lateness (handler start − runAt): p50 ${result.latenessMs.p50} ms  p90 ${result.latenessMs.p90} ms  p99 ${result.latenessMs.p99} ms  max ${result.latenessMs.max} ms`);
    console.log(`missing ${missing}  duplicates ${duplicates}  (target: p99 ≤ 100 ms, 0 missing, 0 duplicates)`);
    console.log(JSON.stringify(result));
  } finally {
    await offline.stop();
    await redis.stop();
  }
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
