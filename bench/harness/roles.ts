/**
 * The three Lambda roles run in this process: the sweeper (runSweeper), the fan-out (runFanout)
 * and a topic's handler (topicHandler), over one runtime, with an invoker that starts each
 * invoked role without waiting for it, as an Event invoke does. No Lambda emulator: the figures
 * are the engine's and Redis's alone.
 */
import { randomBytes } from 'node:crypto';
import type { Cluster, Redis } from 'ioredis';
import type { QueueConfig } from '../../lib/core/queue-config';
import type { Engine, EngineOptions } from '../../lib/engine';
import type { Invoker } from '../../lib/platform/lambda';
import { createRuntime, type Runtime } from '../../lib/platform/runtime';
import { runFanout, type HandlerEvent } from '../../lib/workers/fanout';
import { topicHandler, type JobFunction } from '../../lib/workers/handler';
import { runSweeper } from '../../lib/workers/sweeper';

const ROLE_TIMEOUT_MS = { sweeper: 120_000, fanout: 60_000, handler: 60_000 };

export interface RolesOptions {
  redisUrl: string;
  /** DQ_CONFIG: the queue's configuration (partitions, topics with their handler's name). */
  config: object;
  /** Makes the runtime's engine (given the wake option) and each handler invocation's own. */
  engine(redis: Redis | Cluster, config: QueueConfig, options?: EngineOptions): Engine;
  /** Whether each handler invocation's engine wakes the sweeper too (the runtime's always does). */
  handlerWakes: boolean;
  /** What the handler does with each job. */
  job: JobFunction;
  /** False to drop an invoke of role `name` (default: every one runs). */
  accept?(name: string): boolean;
  /** What runs instead of the handler for `event` (a handler killed, say), or undefined to run it. */
  instead?(event: HandlerEvent): Promise<unknown> | undefined;
}

export interface Roles {
  rt: Runtime;
  /** Every role invocation not finished. */
  running: Set<Promise<unknown>>;
  /** The handler invocations not finished (their acks included). */
  handlers: Set<Promise<unknown>>;
}

/**
 * A runtime whose engine wakes the sweeper through this process's invoker; each handler
 * invocation runs with an engine of its own on the same connection, as each Lambda instance has
 * one: what one engine gathers into one call (acks made together) stays within one invocation.
 */
export function inProcessRoles(options: RolesOptions): Roles {
  const base = createRuntime({
    DQ_CONFIG: JSON.stringify(options.config),
    REDIS_URL: options.redisUrl,
    API_TOKEN: 't',
    WEBHOOK_SECRET: 's',
    DQ_FUNCTION_PREFIX: 'bench-',
    LOG_LEVEL: 'error',
  });
  const roles: Roles = { rt: base, running: new Set(), handlers: new Set() };
  const track = (p: Promise<unknown>, handler = false) => {
    roles.running.add(p);
    if (handler) roles.handlers.add(p);
    void p
      .finally(() => {
        roles.running.delete(p);
        roles.handlers.delete(p);
      })
      .catch(() => undefined);
  };
  const invoker: Invoker = {
    async invokeAsync(name, payload) {
      if (options.accept && !options.accept(name)) return;
      const endsAt = Date.now() + (ROLE_TIMEOUT_MS[name as keyof typeof ROLE_TIMEOUT_MS] ?? ROLE_TIMEOUT_MS.handler);
      const remainingMs = () => endsAt - Date.now();
      const context = { awsRequestId: randomBytes(8).toString('hex'), getRemainingTimeInMillis: remainingMs };
      setImmediate(() => {
        const deps = { ...roles.rt, timings: roles.rt.config.timings, remainingMs };
        if (name === 'sweeper') return track(runSweeper(deps));
        if (name === 'fanout') return track(runFanout(deps, payload as { token?: string }));
        const event = payload as HandlerEvent;
        track(options.instead?.(event) ?? handle(event, context), true);
      });
    },
  };
  const wake = {
    horizonMs: base.config.timings.sweeperHorizonMs,
    startSweeper: () => invoker.invokeAsync('sweeper', { source: 'wake' }),
    onError: () => undefined,
  };
  const engine = options.engine(base.redis, base.config.queue, { wake });
  roles.rt = { ...base, engine, invoker };
  const handle = topicHandler(options.job, () => ({
    ...roles.rt,
    engine: options.engine(base.redis, base.config.queue, options.handlerWakes ? { wake } : undefined),
  }));
  return roles;
}
