/**
 * Tracing benchmark (not a test): the Node CPU a job costs the roles, with tracing off and on, and
 * against another checkout. Starts its own redis-server (nothing persisted); in this process, per
 * round: BENCH_TRACE_JOBS (2,000) jobs added one a request through the API's route (httpRoute,
 * POST /jobs, with a traceparent), swept, claimed by the fan-out (runFanout, its invoker calling
 * the topic handler in this process) and run by the handler (topicHandler, a function that does
 * nothing), each acked. Node CPU (user + system, process.cpuUsage) over the round, per job; Redis
 * runs in its own process and is not counted. Tracing on sends the spans to a local OTLP/HTTP
 * receiver in this process that reads and drops them (its CPU is counted: an upper bound).
 *
 *   npm run bench:tracing
 *   npm run bench:tracing -- --against ../other-checkout   # tracing off here against there
 *
 * Rounds alternate between the variants (off, on, and the other checkout's), BENCH_TRACE_ROUNDS
 * (7) each after a warm-up round each; the median per variant is reported.
 *
 *   npm run bench:tracing -- --instructions [--against ../other-checkout]
 *
 * counts instead the CPU instructions of the Node process (valgrind's callgrind; CPU time drifts by
 * ±15 % between rounds here): per variant a process of its own under callgrind runs a warm-up round
 * of BENCH_TRACE_WARM (500) jobs, then one round of BENCH_TRACE_JOBS whose instructions alone are
 * counted (zeroed before it, dumped after it with callgrind_control), per job. Needs valgrind. What tracing off costs
 * is told against this checkout with the tracing calls taken out (bench/harness/no-tracing.patch: the spans of the
 * request, the attempt and the claim, and their flushes):
 *
 *   git worktree add ../no-tracing && git -C ../no-tracing apply "$PWD/bench/harness/no-tracing.patch"
 *   ln -s "$PWD/node_modules" ../no-tracing/ && BENCH_TRACE_ON=0 BENCH_TRACE_REPEAT=5 \
 *     npm run bench:tracing -- --instructions --against ../no-tracing
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { resolve } from 'node:path';
import { createInterface } from 'node:readline';
import type { Readable } from 'node:stream';
import { spawnUnderCallgrind } from './harness/callgrind';
import type { APIGatewayProxyEventV2 } from 'aws-lambda';
import { envInt } from './harness/env';
import { runBench } from './harness/lifecycle';
import { startServer } from './harness/redis';
import { fmt, printJson, printTable } from './harness/report';

const JOBS = envInt('BENCH_TRACE_JOBS', 2_000);
const ROUNDS = envInt('BENCH_TRACE_ROUNDS', 7);
const WARM = envInt('BENCH_TRACE_WARM', 500);
const TOPIC = 'traced';

/** The modules of one checkout a round uses. */
interface Checkout {
  name: string;
  http: typeof import('../lib/api/http');
  routes: typeof import('../lib/api/routes');
  fanout: typeof import('../lib/workers/fanout');
  handler: typeof import('../lib/workers/handler');
  runtime: typeof import('../lib/platform/runtime');
}

async function load(dir: string, name: string): Promise<Checkout> {
  const at = (path: string) => import(resolve(dir, path));
  return {
    name,
    http: await at('lib/api/http.ts'),
    routes: await at('lib/api/routes.ts'),
    fanout: await at('lib/workers/fanout.ts'),
    handler: await at('lib/workers/handler.ts'),
    runtime: await at('lib/platform/runtime.ts'),
  };
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

/** A local OTLP/HTTP receiver that reads each export and drops it; counts the spans. */
async function receiver(): Promise<{ server: Server; url: string; spans: () => number }> {
  let spans = 0;
  const server = createServer((req, res) => {
    let text = '';
    req.on('data', (chunk: Buffer) => (text += chunk.toString()));
    req.on('end', () => {
      const body = JSON.parse(text) as { resourceSpans: { scopeSpans: { spans: unknown[] }[] }[] };
      for (const rs of body.resourceSpans) for (const ss of rs.scopeSpans) spans += ss.spans.length;
      res.writeHead(200).end('{}');
    });
  });
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, spans: () => spans };
}

const event = (i: number, round: string) =>
  ({
    rawPath: '/jobs',
    routeKey: 'POST /jobs',
    headers: { authorization: 'Bearer t', traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01' },
    requestContext: { http: { method: 'POST' } },
    body: JSON.stringify({ topic: TOPIC, id: `${round}-${i}`, delay: 0, body: { n: i } }),
  }) as unknown as APIGatewayProxyEventV2;

/** One round of `jobs` jobs on checkout `c` (tracing to `endpoint`, or off): Node CPU µs per job. */
async function round(
  c: Checkout,
  redisUrl: string,
  endpoint: string | undefined,
  name: string,
  jobs = JOBS,
): Promise<number> {
  const rt = c.runtime.createRuntime({
    DQ_CONFIG: JSON.stringify({ topics: { [TOPIC]: { handler: 'h', concurrency: 10_000, batchSize: 10 } } }),
    REDIS_URL: redisUrl,
    API_TOKEN: 't',
    WEBHOOK_SECRET: 's',
    DQ_FUNCTION_PREFIX: 'bench-',
    LOG_LEVEL: 'error',
    DQ_WAKE_INVOKES: 'false',
    ...(endpoint ? { DQ_OTLP_ENDPOINT: endpoint } : {}),
  });
  const route = c.http.httpRoute(c.routes.addJob, () => rt);
  const handle = c.handler.topicHandler(
    async () => {},
    () => rt,
  );
  const context = { awsRequestId: 'b', getRemainingTimeInMillis: () => 0 };
  const runs: Promise<unknown>[] = [];
  const invoker = {
    invokeAsync: async (_name: string, payload: unknown) => {
      runs.push(handle(payload as Parameters<typeof handle>[0], context));
    },
  };
  const cpu0 = process.cpuUsage();
  for (let i = 0; i < jobs; i += 50)
    await Promise.all(Array.from({ length: Math.min(50, jobs - i) }, (_, j) => route(event(i + j, name), context)));
  for (let r = await rt.engine.sweep(); r.more; r = await rt.engine.sweep()); // a sweep moves up to moveLimit
  await c.fanout.runFanout({ ...rt, invoker });
  const reports = (await Promise.all(runs)) as { done: number }[];
  const done = reports.reduce((sum, r) => sum + r.done, 0);
  const cpu = process.cpuUsage(cpu0);
  if (done !== jobs) throw new Error(`${name}: ${done} of ${jobs} jobs ran`);
  rt.redis.disconnect();
  return (cpu.user + cpu.system) / jobs;
}

/**
 * The child of --instructions: a warm-up round on checkout `dir`, then, once the parent zeroed the counts (a line on
 * stdin), the counted round; 'ready' and 'done' on stdout tell the parent; exits on the next line.
 */
async function child(dir: string, tag: string): Promise<void> {
  const c = await load(dir, dir);
  const url = process.env.BENCH_REDIS_URL!;
  const endpoint = process.env.BENCH_TRACE_ENDPOINT || undefined;
  const lines = createInterface({ input: process.stdin })[Symbol.asyncIterator]();
  const say = (word: string) => process.stdout.write(`${word}\n`);
  console.log = () => {}; // the handlers' metric lines: stdout is the parent's protocol
  await round(c, url, endpoint, `${tag}w`, WARM);
  say('ready');
  await lines.next();
  await round(c, url, endpoint, `${tag}c`, JOBS);
  say('done');
  await lines.next();
  process.exit(0);
}

/** Resolves once `stream` gives the line `word`. */
async function lineOf(stream: Readable, word: string): Promise<void> {
  for await (const line of createInterface({ input: stream })) if (line.trim() === word) return;
  throw new Error(`the child ended before it said ${word}`);
}

/** Instructions a job of variant `dir` (tracing to `endpoint`, or off) costs Node: one child under callgrind. */
async function countJob(dir: string, tag: string, redisUrl: string, endpoint: string | undefined): Promise<number> {
  const loaders = ['--import', 'tsx', '--import', './test/support/lua-loader.mjs'];
  const p = spawnUnderCallgrind(process.execPath, [...loaders, __filename, '--child', dir, tag], {
    stdio: ['pipe', 'pipe', 'inherit'],
    env: { ...process.env, BENCH_REDIS_URL: redisUrl, BENCH_TRACE_ENDPOINT: endpoint ?? '' },
  });
  try {
    const stdout = p.child.stdout!;
    const ready = lineOf(stdout, 'ready');
    await ready;
    p.zero();
    const done = lineOf(stdout, 'done');
    p.child.stdin!.write('go\n');
    await done;
    const total = await p.dump(tag);
    p.child.stdin!.write('exit\n');
    return total / JOBS;
  } finally {
    await p.stop();
  }
}

/**
 * --instructions: Node instructions a job, tracing off (and on, unless BENCH_TRACE_ON=0) here, and off in the other
 * checkout; BENCH_TRACE_REPEAT (1) children a variant, alternating, the median reported (the count moves by a few
 * per cent from one child to the next: how the acks and claims fall into batches follows the timing).
 */
async function instructions(redisUrl: string, sinkUrl: string, other: string | undefined): Promise<void> {
  const here = resolve(__dirname, '..');
  const variants: [string, string, string | undefined][] = [
    ['tracing off', here, undefined],
    ...(process.env.BENCH_TRACE_ON === '0' ? [] : [['tracing on', here, sinkUrl] as [string, string, string]]),
    ...(other ? [[other, resolve(other), undefined] as [string, string, undefined]] : []),
  ];
  const counts = new Map<string, number[]>(variants.map(([name]) => [name, []]));
  for (let r = 0; r < envInt('BENCH_TRACE_REPEAT', 1); r++)
    for (const [name, dir, endpoint] of variants)
      counts.get(name)!.push(await countJob(dir, `${name.replace(/\W/g, '') || 'other'}${r}`, redisUrl, endpoint));
  const off = median(counts.get('tracing off')!);
  printTable(
    variants.map(([name]) => {
      const all = counts.get(name)!;
      return [name, fmt(median(all), 0), `${(median(all) / off).toFixed(4)}×`, all.map((n) => fmt(n, 0)).join(' / ')];
    }),
    ['roles (add, fan-out, handler), Node', 'instructions a job (median)', 'vs off', 'each child'],
  );
  printJson({
    bench: 'tracing',
    mode: 'instructions',
    jobs: JOBS,
    warm: WARM,
    instructionsPerJob: Object.fromEntries(counts),
  });
}

async function main() {
  const server = await startServer();
  const sink = await receiver();
  try {
    const at = process.argv.indexOf('--against');
    if (process.argv.includes('--instructions'))
      return await instructions(server.url, sink.url, at > 0 ? process.argv[at + 1] : undefined);
    const here = await load(resolve(__dirname, '..'), 'this checkout');
    const other = at > 0 ? await load(process.argv[at + 1]!, process.argv[at + 1]!) : undefined;
    const variants: [string, Checkout, string | undefined][] = [
      ['tracing off', here, undefined],
      ['tracing on', here, sink.url],
      ...(other ? [[`${other.name}`, other, undefined] as [string, Checkout, undefined]] : []),
    ];
    const times = new Map<string, number[]>(variants.map(([name]) => [name, []]));
    const print = console.log;
    console.log = () => {}; // the handlers' and fan-out's metric lines (EMF), thousands a round
    try {
      for (let r = -1; r < ROUNDS; r++)
        for (const [name, c, endpoint] of variants) {
          const us = await round(c, server.url, endpoint, `${name.replace(/\W/g, '')}${r + 1}`);
          if (r >= 0) times.get(name)!.push(us);
        }
    } finally {
      console.log = print;
    }
    const off = median(times.get('tracing off')!);
    const rows = variants.map(([name]) => {
      const m = median(times.get(name)!);
      return [name, fmt(m, 1), `${(m / off).toFixed(3)}×`];
    });
    printTable(rows, ['roles (add, fan-out, handler), Node CPU', 'µs a job (median)', 'vs off']);
    const spans = sink.spans() / ((ROUNDS + 1) * JOBS);
    console.log(`spans sent a job when on: ${spans.toFixed(2)}`);
    printJson({
      bench: 'tracing',
      jobs: JOBS,
      rounds: ROUNDS,
      medianUsPerJob: Object.fromEntries([...times].map(([k, v]) => [k, median(v)])),
      spansPerJob: spans,
    });
  } finally {
    sink.server.close();
    await server.stop();
  }
}

const childAt = process.argv.indexOf('--child');
if (childAt > 0) void child(process.argv[childAt + 1]!, process.argv[childAt + 2]!);
else runBench(main, { forceExit: true });
