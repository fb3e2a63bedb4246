/**
 * One fault-test stack: a redis-server, the router (invoke API), three killable hosts (sweeper,
 * fan-out, webhook handler), the recording webhook target, an engine for adding jobs the way the
 * API does (add, then nudge the sweeper), and a compressed tick (the per-minute EventBridge
 * schedule, every `tickMs`).
 */
import { Redis } from 'ioredis';
import { loadConfig, type Timings } from '../../../lib/core/queue-config';
import { createInvoker } from '../../../lib/platform/lambda';
import { createLogger } from '../../../lib/platform/log';
import { Queue, queueOf } from '../../support/queue';
import { Engine } from '../../../lib/engine';
import { startRedis, type RedisProcess } from '../../support/redis';
import { FAULT_PREFIX, HostSlot, lambdaEnv, Recorder, Router, tally, until, type Tally } from './harness';

export interface StackOptions {
  /** Reach Redis at this URL (a proxy, say) instead of starting a redis-server of its own. */
  redisUrl?: string;
  skewMs?: number;
  tickMs?: number;
  env?: Record<string, string>;
}

export class Stack {
  redisServer: RedisProcess | undefined;
  redis!: Redis;
  queue!: Queue;
  router = new Router();
  recorder = new Recorder();
  sweeper!: HostSlot;
  fanout!: HostSlot;
  handler!: HostSlot;
  /** Ids accepted (created) with their due time, epoch ms on the Redis clock. */
  readonly ledger = new Map<string, number>();
  addErrors = 0;
  private ticker: NodeJS.Timeout | undefined;
  private seq = 0;
  private readonly log = createLogger('fault-test', {}, 'error', () => undefined);
  private invoker!: ReturnType<typeof createInvoker>;
  private timings!: Timings;
  /** The hosts' environment (lambdaEnv with the options' env). */
  env: Record<string, string> = {};

  constructor(private readonly options: StackOptions = {}) {}

  async start(): Promise<void> {
    if (!this.options.redisUrl) this.redisServer = await startRedis();
    const redisUrl = this.options.redisUrl ?? this.redisServer!.url;
    this.redis = new Redis(redisUrl);
    await this.recorder.start();
    await this.router.open();
    const env = lambdaEnv(redisUrl, this.router.url, this.options.env);
    this.env = env;
    const host = this.options.skewMs ? { skewMs: this.options.skewMs } : {};
    this.sweeper = new HostSlot(['sweeper'], env, host);
    this.fanout = new HostSlot(['fanout'], env, host);
    this.handler = new HostSlot(['webhookHandler'], env, host);
    await Promise.all([this.sweeper.start(), this.fanout.start(), this.handler.start()]);
    for (const slot of [this.sweeper, this.fanout, this.handler]) this.router.route(slot);
    const config = loadConfig(env);
    this.timings = config.timings;
    const invoker = createInvoker({
      functionPrefix: FAULT_PREFIX,
      lambdaEndpoint: this.router.url,
      region: 'us-east-1',
    });
    this.invoker = invoker;
    // adds wake the sweeper the way the API's do (the runtime gives its engine the same wake-up)
    const wake = {
      horizonMs: config.timings.sweeperHorizonMs,
      startSweeper: () => invoker.invokeAsync('sweeper', { source: 'wake' }),
      onError: () => undefined,
    };
    this.queue = queueOf(new Engine(this.redis, config.queue, { wake }));
    const tickMs = this.options.tickMs ?? 2000;
    this.ticker = setInterval(() => void this.tick(), tickMs);
  }

  /** The schedule's tick: an async invoke of the sweeper (lost while the invoke API is down). */
  async tick(): Promise<void> {
    await this.invoker.invokeAsync('sweeper', { source: 'tick' }).catch(() => undefined);
  }

  /** Adds one webhook job due in `delayS` seconds, as POST /jobs does; records it when created. */
  async add(delayS: number, label = 'job'): Promise<string | undefined> {
    const id = `${label}-${++this.seq}`;
    try {
      const outcome = await this.queue.add({
        topic: 'webhook',
        id,
        delay: delayS,
        url: `${this.recorder.url}/hook/${id}`,
        body: { id },
      });
      if (outcome.status !== 'created') throw new Error(`add answered ${outcome.status}`);
      this.ledger.set(id, Date.parse(outcome.job.runAt));
      return id;
    } catch {
      this.addErrors += 1;
      return undefined;
    }
  }

  /** Waits until every accepted job was delivered (or `timeoutMs`), then tallies. */
  async settle(scenario: string, timeoutMs: number, extra: Record<string, unknown> = {}): Promise<Tally> {
    await until(
      () => {
        const counts = this.recorder.counts();
        return [...this.ledger.keys()].every((id) => counts.has(id));
      },
      timeoutMs,
      200,
    );
    await new Promise((r) => setTimeout(r, 1000)); // late duplicates, if any, arrive now
    return tally(scenario, this.ledger.keys(), this.recorder.counts(), extra);
  }

  /** Hosts' output, for a failure message. */
  output(): string {
    return [this.sweeper, this.fanout, this.handler]
      .map((s) => `--- ${s.functions.join(',')}\n${s.host?.output() ?? ''}`)
      .join('\n');
  }

  /** Stops everything it started, each part whatever happened to the others. */
  async stop(): Promise<void> {
    if (this.ticker) clearInterval(this.ticker);
    const results = await Promise.allSettled([
      this.sweeper?.stop(),
      this.fanout?.stop(),
      this.handler?.stop(),
      this.router.close(),
      this.recorder.close(),
    ]);
    this.redis?.disconnect();
    await this.redisServer?.stop();
    const failed = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
    if (failed) throw failed.reason;
  }
}
