/**
 * Flow control per key (issue 32): the types the engine's door takes and answers. A topic with
 * `flow` in its configuration is a flow topic: its jobs may carry a flow `key` (a tenant, a
 * partner), the ready ones wait in one lane per key, and claims go round the keys, each key
 * within its own concurrency and rate, the topic within its combined `concurrency`. All of a flow
 * topic lives in one partition (the topic's own), so every key's state shares its jobs' slot.
 */
import type { TopicConfig } from '../core/queue-config';
import { contextOf, topicOf, type EngineContext } from './context';
import { topicKeys } from './keys';
import { run } from './script-runner';
import * as script from './scripts';
import { settle } from './durable';
import { wakeFor } from './coordination';

/**
 * A key's pace (GCRA): one start every perMs/count, `burst` of them at once after a quiet spell; so at most
 * count + burst - 1 starts in any `perMs` (right after a quiet spell), `count` a `perMs` while busy.
 */
export interface FlowRate {
  count: number;
  perMs: number;
  burst: number;
}

/** A key's limits: attempts running at once (null: only the topic's combined cap) and its pace (null: none). */
export interface FlowLimits {
  concurrency: number | null;
  rate: FlowRate | null;
}

/** A flow key's live state, as GET /topics/{topic}/flows/{key} shows it. */
export interface FlowKeyState {
  topic: string;
  key: string;
  /** Attempts of the key running now (claimed, not ended). */
  running: number;
  /** Ids waiting in the key's lane (a cancelled job's id counts until a claim meets it). */
  ready: number;
  paused: boolean;
  /** Epoch ms until which the key's rate holds its next start back; null when it does not. */
  heldUntil: number | null;
  /** The limits in force: the key's pinned ones over the topic's defaults. */
  limits: FlowLimits;
  /** The limits set for this key over the API (producers cannot change them); null when it follows the topic's. */
  pinned: Partial<FlowLimits> | null;
  /**
   * The name of the API key that last pinned the key's limits or paused or resumed it (null: none, or a deployment
   * without keys); null when nothing is pinned.
   */
  updatedBy: string | null;
  /** When that was (epoch ms); null when nothing is pinned. */
  updatedAt: number | null;
}

/** A change of a key's pinned limits and pause: a field left out stays; null returns it to the topic's default. */
export interface FlowKeyChange {
  concurrency?: number | null;
  rate?: FlowRate | null;
  paused?: boolean;
}

/** The flow topic `t`'s keys: its one partition's. */
function flowTopicKeys(ctx: EngineContext, t: TopicConfig) {
  if (!t.flow) throw new Error(`topic ${t.name} has no flow control: the caller checks`);
  const partition = ctx.layout.placeOf(t, '');
  return { partition, jobs: topicKeys(partition, t.name, ctx.layout).jobs };
}

/** A key's state from the scripts' reply, its limits resolved over the topic's defaults. */
function toState(t: TopicConfig, key: string, reply: script.FlowKeyReply): FlowKeyState {
  const [now, running, ready, tat, concurrency, count, perMs, burst, paused, , updatedBy, updatedAt] = reply;
  const pinnedRate = count !== null ? { count, perMs: perMs!, burst: burst! } : null;
  const pinned: Partial<FlowLimits> = {
    ...(concurrency !== null ? { concurrency } : {}),
    ...(pinnedRate ? { rate: pinnedRate } : {}),
  };
  const limits: FlowLimits = { concurrency: concurrency ?? t.flow!.concurrency, rate: pinnedRate ?? t.flow!.rate };
  const next = limits.rate && tat > 0 ? tat - (limits.rate.burst - 1) * (limits.rate.perMs / limits.rate.count) : 0;
  return {
    topic: t.name,
    key,
    running,
    ready,
    paused: paused === 1,
    heldUntil: next > now ? Math.ceil(next) : null,
    limits,
    pinned: Object.keys(pinned).length > 0 ? pinned : null,
    updatedBy,
    updatedAt,
  };
}

/** Key `key` of flow topic `t`: its live state. */
export async function getFlowKey(ctx: EngineContext, t: TopicConfig, key: string): Promise<FlowKeyState> {
  const { jobs } = flowTopicKeys(ctx, t);
  return toState(t, key, await run(ctx.redis, script.getFlowKey([jobs], { clock: ctx.clock(), key })));
}

/**
 * Pins key `key`'s limits and pause ('clear': drops them), `by` (the API key's name, '' for none) recorded as the
 * change's maker; the key's state after. Returns the partition written too.
 */
export async function setFlowKey(
  ctx: EngineContext,
  t: TopicConfig,
  key: string,
  change: FlowKeyChange | 'clear',
  by: string,
): Promise<{ state: FlowKeyState; partition: number }> {
  const { jobs, partition } = flowTopicKeys(ctx, t);
  const c = change === 'clear' ? {} : change;
  const call = script.setFlowKey([jobs], {
    clock: ctx.clock(),
    key,
    mode: change === 'clear' ? 'clear' : 'set',
    concurrency: c.concurrency === undefined ? '' : c.concurrency === null ? '-' : c.concurrency,
    rate: c.rate === undefined ? '' : c.rate === null ? '-' : c.rate,
    paused: c.paused === undefined ? '' : c.paused ? '1' : '0',
    by,
  });
  return { state: toState(t, key, await run(ctx.redis, call)), partition };
}

/** Pauses (or resumes) topic `t` in every partition at once; the partitions written. */
export async function pauseTopic(ctx: EngineContext, t: TopicConfig, paused: boolean, by: string): Promise<number[]> {
  const partitions = [...ctx.layout.partitionsOf(t)];
  await Promise.all(
    partitions.map((p) => run(ctx.redis, script.pauseTopic([topicKeys(p, t.name, ctx.layout).jobs], { paused, by }))),
  );
  return partitions;
}

/** The engine's pauses of a topic and a flow topic's keys (Engine in ./engine.ts lists them). */
export const flowOps = {
  /**
   * Pauses topic `topic`: once this returns, no job of it starts (claims take nothing, and attempts
   * claimed before are held back at their start, uncounted) until it is resumed; adds are still
   * accepted and running attempts finish.
   */
  async pauseTopic(this: object, topic: string, by = ''): Promise<void> {
    const ctx = contextOf(this);
    const partitions = await pauseTopic(ctx, topicOf(ctx, topic), true, by);
    await settle(ctx, partitions, partitions);
  },

  /** Resumes topic `topic`: its ready jobs start again within its limits (the sweeper is woken to hand them out). */
  async resumeTopic(this: object, topic: string, by = ''): Promise<void> {
    const ctx = contextOf(this);
    const partitions = await pauseTopic(ctx, topicOf(ctx, topic), false, by);
    await settle(ctx, partitions, partitions);
    await wakeFor(ctx, 'now');
  },

  /** Flow key `key` of flow topic `topic`: running, ready, pace, limits, pause. */
  flowKey(this: object, topic: string, key: string): Promise<FlowKeyState> {
    const ctx = contextOf(this);
    return getFlowKey(ctx, topicOf(ctx, topic), key);
  },

  /**
   * Pins flow key `key`'s limits and/or pauses or resumes it ('clear': back to the topic's
   * defaults, resumed). A key's pause has a topic pause's guarantee: none of its jobs starts once
   * this returns. A key given room or resumed is handed out again (the sweeper is woken). `by`:
   * the API key's name, the pinned record's updatedBy.
   */
  async setFlowKey(
    this: object,
    topic: string,
    key: string,
    change: FlowKeyChange | 'clear',
    by = '',
  ): Promise<FlowKeyState> {
    const ctx = contextOf(this);
    const { state, partition } = await setFlowKey(ctx, topicOf(ctx, topic), key, change, by);
    await settle(ctx, [partition], [partition]);
    if (!state.paused && state.ready > 0) await wakeFor(ctx, 'now');
    return state;
  },
};
