/** The outboxes' drain: adds the jobs that ends notify (./callbacks.ts tells the formats). */
import { contextOf, type EngineContext } from './context';
import { callbackId, callbackBody, parseEntry } from './callbacks';
import { outboxKey, topicKeys } from './keys';
import { groupBy } from './partitions';
import { placesOf } from './read';
import { run, runPipelined } from './script-runner';
import * as script from './scripts';
import type { NewJob } from './shapes';
import { writeDurably, writeOps } from './write';
import { isRefused } from './jobs';

/** How long a taker holds the entries handed to it before they are handed out again. */
export const OUTBOX_LEASE_MS = 30_000;
/** Entries a take hands out at most (lua/takeCallbacks-1.lua): a call's work stays bounded. */
const OUTBOX_BATCH = 100;
/** Takes one drain makes of one outbox at most; the sweeper's next look drains the rest. */
const OUTBOX_ROUNDS = 10;

/** What a drain did: jobs added (or found added before), and entries left for later with why. */
export interface DrainReport {
  notified: number;
  kept: number;
  errors: string[];
}

/** The job entry `text` of topic `topic`'s outbox notifies with, or a reason it cannot be added now. */
function notification(ctx: EngineContext, topic: string, text: string): NewJob | string {
  const entry = parseEntry(text);
  if (!entry) return `outbox entry of topic ${topic} is not one: ${JSON.stringify(text.slice(0, 80))}`;
  const target = ctx.config.topics.get(entry.callback.topic);
  if (!target) return `callback topic ${entry.callback.topic} (of job ${topic}/${entry.id}) is not configured`;
  const id = callbackId(topic, entry);
  return {
    topic: target.name,
    id,
    partition: ctx.layout.placeOf(target, id),
    when: { kind: 'd', ms: 0 },
    body: JSON.stringify(callbackBody(topic, entry)),
    ...(entry.callback.url ? { url: entry.callback.url } : {}),
  };
}

/**
 * Adds the jobs of entries `texts` (of topic `topic`'s outbox `outbox`) and removes the entries that were added or
 * found added; a job whose add threw or that cannot be added stays in the outbox, handed out again after its lease.
 */
async function notify(
  ctx: EngineContext,
  topic: string,
  outbox: ReturnType<typeof outboxKey>,
  texts: readonly string[],
  report: DrainReport,
): Promise<void> {
  const jobs: NewJob[] = [];
  const sent: string[] = [];
  for (const text of texts) {
    const job = notification(ctx, topic, text);
    if (typeof job === 'string') {
      report.kept += 1;
      report.errors.push(job);
    } else {
      jobs.push(job);
      sent.push(text);
    }
  }
  if (jobs.length === 0) return;
  const { results } = await writeDurably(ctx, jobs, 'add');
  await run(ctx.redis, script.endCallbacks([outbox], sent));
  report.notified += results.length;
}

/**
 * Hands out topic `topic`'s due outbox entries in `partition` and adds the jobs they name (at most OUTBOX_ROUNDS
 * takes of OUTBOX_BATCH). Throws when Redis does; what it added stays added.
 */
export async function drainOutbox(
  ctx: EngineContext,
  topic: string,
  partition: number,
  report: DrainReport = { notified: 0, kept: 0, errors: [] },
): Promise<DrainReport> {
  const outbox = outboxKey(topicKeys(partition, topic, ctx.layout).jobs);
  for (let round = 0; round < OUTBOX_ROUNDS; round++) {
    const [, ...texts] = await run(
      ctx.redis,
      script.takeCallbacks([outbox], { clock: ctx.clock(), leaseMs: OUTBOX_LEASE_MS, limit: OUTBOX_BATCH }),
    );
    if (texts.length === 0) break;
    await notify(ctx, topic, outbox, texts, report);
    if (texts.length < OUTBOX_BATCH) break;
  }
  return report;
}

/**
 * Right after a script ended a job of topic `topic` in `partition` and wrote its callback's entry: adds the job it
 * names. An error leaves the entry in the outbox, which the sweeper's next look drains (drainAll).
 */
export async function notifyNow(ctx: EngineContext, topic: string, partition: number): Promise<void> {
  await drainOutbox(ctx, topic, partition).catch(() => undefined);
}

/**
 * Drains every topic's outboxes, in each partition the topic may have jobs in (the former layout's too): the
 * sweeper's look for ends whose notifier died or that a script found (time-outs, expiry). One call per topic and
 * partition when they are empty, pipelined per partition.
 */
export async function drainAll(ctx: EngineContext): Promise<DrainReport> {
  const report: DrainReport = { notified: 0, kept: 0, errors: [] };
  const places = [...ctx.config.topics.values()].flatMap((t) =>
    ctx.layout.partitionsOf(t).map((partition) => ({ topic: t.name, partition })),
  );
  const outboxOf = (topic: string, partition: number) => outboxKey(topicKeys(partition, topic, ctx.layout).jobs);
  const take = { clock: ctx.clock(), leaseMs: OUTBOX_LEASE_MS, limit: OUTBOX_BATCH };
  await Promise.all(
    [...groupBy(places, (p) => p.partition)].map(async ([partition, here]) => {
      const topics = here.map((p) => p.topic);
      const firsts = await runPipelined(
        ctx.redis,
        topics.map((topic) => script.takeCallbacks([outboxOf(topic, partition)], take)),
      );
      for (const [i, topic] of topics.entries()) {
        const [, ...texts] = firsts[i]!;
        if (texts.length === 0) continue;
        await notify(ctx, topic, outboxOf(topic, partition), texts, report);
        if (texts.length === OUTBOX_BATCH) await drainOutbox(ctx, topic, partition, report);
      }
    }),
  );
  return report;
}

/** The engine's callback operations (Engine in ./engine.ts lists them). */
export const callbackOps = {
  /**
   * Cancels a pending or running job (writeOps.cancel); when its callback notifies a cancel, adds the callback's job
   * before it answers.
   */
  async cancel(
    this: object,
    topic: string,
    id: string,
    ifMatch: '' | '*' | number = '',
    by = '',
  ): ReturnType<typeof writeOps.cancel> {
    const outcome = await writeOps.cancel.call(this, topic, id, ifMatch, by);
    if (!isRefused(outcome) && outcome.job.state === 'cancelled' && outcome.job.callback?.on.includes('cancelled')) {
      const ctx = contextOf(this);
      for (const p of placesOf(ctx, ctx.config.topics.get(topic) ?? topic, id)) await notifyNow(ctx, topic, p);
    }
    return outcome;
  },

  /**
   * Adds the jobs that ends waiting in the outboxes notify: of topic `topic` in `partition` when given, else of every
   * topic and partition (the sweeper's look).
   */
  drainCallbacks(this: object, at?: { topic: string; partition: number }): Promise<DrainReport> {
    const ctx = contextOf(this);
    return at ? drainOutbox(ctx, at.topic, at.partition) : drainAll(ctx);
  },
};
