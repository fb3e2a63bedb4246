import type { Cluster, Redis } from 'ioredis';
import { loadConfig, type AppConfig } from './config';
import { createInvoker, type Invoker } from './lambda';
import { createLogger, setMetricsService, type Logger } from './log';
import { DelayQueue } from './queue';
import { createRedis } from './redis';

/** What every Lambda of the stack shares within one process: created once, at first use. */
export interface Runtime {
  config: AppConfig;
  redis: Redis | Cluster;
  queue: DelayQueue;
  invoker: Invoker;
  log: Logger;
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
  return { config, redis, queue: new DelayQueue(redis, config.queue), invoker: createInvoker(config), log };
}

/** The process's runtime, built from process.env at the first call (the cold start). */
export function runtime(): Runtime {
  return (current ??= createRuntime(process.env));
}
