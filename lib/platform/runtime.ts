import { Cluster, type Redis } from 'ioredis';
import { connectedReplicas, Engine } from '../engine';
import { loadConfig, type AppConfig } from '../core/queue-config';
import { createInvoker, type Invoker } from './lambda';
import { createLogger, setMetricsService, type Logger } from './log';
import { createRedis } from './redis';
import { tracerFromEnv, type Tracer } from './tracing';

/** What every Lambda of the stack shares within one process: created once, at first use. */
export interface Runtime {
  config: AppConfig;
  redis: Redis | Cluster;
  engine: Engine;
  invoker: Invoker;
  log: Logger;
  /** Traces (./tracing.ts): NO_TRACER unless DQ_OTLP_ENDPOINT is set. */
  tracer: Tracer;
}

let current: Runtime | undefined;

/**
 * A new runtime built from `env` (its own Redis connection, engine, invoker and logger); throws
 * naming the bad variable. Tests build one and hand `() => rt` to `httpRoute` or `topicHandler`.
 */
export function createRuntime(env: NodeJS.ProcessEnv): Runtime {
  const config = loadConfig(env);
  const redis = createRedis(config.redis);
  setMetricsService(config.functionPrefix.replace(/-$/, ''));
  const log = createLogger('delay-queue', { function_name: env.AWS_LAMBDA_FUNCTION_NAME }, config.logLevel);
  redis.on('error', (error: Error) => log.warn('redis connection error', { error }));
  if (config.queue.durability.mode === 'replica') warnWithoutReplica(redis, log);
  const invoker = createInvoker(config);
  // the engine wakes the sweeper after a change that made a job due first; it starts one only where wake-ups may invoke
  const startSweeper = config.wakeInvokes ? () => invoker.invokeAsync('sweeper', { source: 'wake' }) : undefined;
  const wake = {
    horizonMs: config.timings.sweeperHorizonMs,
    onError: (error: unknown) => log.warn('could not wake the sweeper', { error }),
    ...(startSweeper ? { startSweeper } : {}),
  };
  const tracer = tracerFromEnv(env, config.functionPrefix.replace(/-$/, ''), (error) =>
    log.warn('could not export traces', { error }),
  );
  return { config, redis, engine: new Engine(redis, config.queue, { wake }), invoker, log, tracer };
}

/**
 * Durability `replica` with no replica connected: every change will answer 503 NOT_REPLICATED.
 * Said once, at cold start, as a warning naming the fix; not a failure (a replica may be
 * resyncing, and reads still work).
 */
function warnWithoutReplica(redis: Redis | Cluster, log: Logger): void {
  const check = () =>
    connectedReplicas(redis).then(
      (counts) => {
        if (counts.length === 0 || counts.some((n) => n === 0)) {
          log.warn(
            'durability is replica but a primary has no connected replica: changes will be refused with 503 NOT_REPLICATED until one connects (or set DQ_DURABILITY=none)',
            { replicas: counts },
          );
        }
      },
      (error: unknown) => log.warn('could not check the replicas of the primary', { error }),
    );
  if (redis instanceof Cluster) redis.once('ready', () => void check());
  else void check();
}

/** The process's runtime, built from process.env at the first call (the cold start). */
export function runtime(): Runtime {
  return (current ??= createRuntime(process.env));
}
