/** Consumer-side changes: claim jobs for an attempt, start, then ack, fail or release them. */
import type { FlowDefaults, TopicConfig } from '../core/queue-config';
import { latenessKey, topicKeys, topicRateKey, type BodiesKey } from './keys';
import type { ClockArg } from './scripts';
import { SCRIPT_CALL_BYTES } from '../core/limits';
import { randomHex } from '../core/random';
import { readSlots, run } from './script-runner';
import { contextOf, topicOf, type EngineContext } from './context';
import { OUTCOME, REFUSAL } from './codes';
import {
  toAckOutcome,
  toClaimed,
  toFailOutcome,
  type AckOutcome,
  type AttemptRef,
  type ClaimedJob,
  type FailOutcome,
} from './jobs';
import { atLeastOne, batchesByPartition, groupBy, partitionsInOrder } from './partitions';
import { bodiesApart, inPlaces } from './read';
import * as script from './scripts';
import { wakeFor } from './coordination';
import { notifyNow } from './outbox';

const RELEASE_BATCH = 500; // jobs per releaseJobs call: 1,500 arguments, about a millisecond of Redis time

/**
 * Running attempts and ready ids of topic `t` per partition (a ZCARD and an LLEN per partition,
 * one pipeline per node: see readSlots); null on a single partition, where the script counts them
 * itself.
 */
async function countsByPartition(
  ctx: EngineContext,
  t: TopicConfig,
): Promise<{ running: number[]; ready: number[] } | null> {
  if (ctx.layout.size === 1) return null;
  const keys = partitionsInOrder(ctx.layout.size).map((p) => topicKeys(p, t.name, ctx.layout));
  const counts = await readSlots(
    ctx.redis,
    keys.map((k) => k.ready),
    (pipeline, p) => pipeline.zcard(keys[p]!.running).llen(keys[p]!.ready),
  );
  return { running: counts.map(([running]) => running as number), ready: counts.map(([, ready]) => ready as number) };
}

/**
 * Claims up to `count` ready jobs of topic `t` for one attempt each, keeping its running attempts
 * at most `maxRunning`, and stopping before the job whose body would take the claimed bodies past
 * `maxBytes` (the first job always gets through, whatever its size). Each script call stops at
 * SCRIPT_CALL_BYTES. Partitions whose ready list was empty when counted are passed over (a job
 * that became ready since waits for the next claim); the others are visited one after another,
 * starting one further each call, and one whose claim stopped at its byte budget is asked again
 * before the next. `at`: the Redis
 * time (ms) the claim counts as made, instead of the clock at each call. `start`: the attempts are
 * started too, in the same script call (for a handler that runs what it claims at once).
 */
export async function claimJobs(ctx: EngineContext, t: TopicConfig, request: ClaimRequest): Promise<Claim> {
  if (t.flow) return ackedFirst(ctx, t, request, (rest) => claimFlow(ctx, t, t.flow!, rest));
  const { ack, ...rest } = request;
  // one job for the one attempt acked, over several partitions: in its place first, without counting them
  if (!ack || rest.count !== 1 || ctx.layout.size === 1 || ctx.layout.former > 0) return claimCounted(ctx, t, request);
  const swap = await claimInPlace(ctx, t, rest, ack);
  if (swap.jobs.length > 0) return swap;
  const claim = await claimCounted(ctx, t, rest);
  return { ...claim, expired: claim.expired + swap.expired, ack: swap.ack! };
}

/**
 * A claim of one job that carries the ack of one attempt, in that attempt's partition, made without counting the
 * topic's partitions: it takes a job only when the ack ended the attempt, in its slot, so the topic's running count
 * stays what it was (claimJobs-7 with max running ''). `drained` is false: the other partitions were not looked at.
 */
async function claimInPlace(
  ctx: EngineContext,
  t: TopicConfig,
  request: Omit<ClaimRequest, 'ack'>,
  ack: NonNullable<ClaimRequest['ack']>,
): Promise<Claim> {
  const { at, maxBytes = SCRIPT_CALL_BYTES, start = false } = request;
  const p = ctx.layout.placeOf(t, ack.id);
  const k = topicKeys(p, t.name, ctx.layout);
  const call = script.claimJobs(claimKeys(ctx, t, p), {
    ...claimArgs(ctx, t, { at, count: 1, maxRunning: 0, left: maxBytes, strict: false, start }),
    maxRunning: '',
    acks: [attemptArg(ack.id, ack.ref)],
  });
  const [now, , , , , atCap, gone, codes, ...items] = await run(ctx.redis, call);
  const claimed: ClaimedJob[] = [];
  await handOut(ctx, t, { bodiesKey: k.bodies, now, items }, claimed);
  const outcome = await carriedAck(ctx, t, p, ack, codes === 0 ? undefined : codes[0]);
  return { jobs: claimed, heldUntil: null, drained: false, capped: atCap === 1, expired: gone, ack: outcome };
}

/** The keys of a claimJobs-7 call in partition `p` of topic `t`. */
function claimKeys(ctx: EngineContext, t: TopicConfig, p: number) {
  const k = topicKeys(p, t.name, ctx.layout);
  return [k.ready, k.running, k.jobs, k.bodies, k.delayed, k.done, latenessKey(p, t.name, ctx.layout)] as const;
}

/** claimJobs over the topic's partitions, counted first (countsByPartition), the request's ack carried. */
async function claimCounted(ctx: EngineContext, t: TopicConfig, request: ClaimRequest): Promise<Claim> {
  const { count, maxRunning, maxBytes = SCRIPT_CALL_BYTES, at, start = false } = request;
  const counts = await countsByPartition(ctx, t);
  const runningBy = counts?.running ?? [];
  const ack = await ackCarrier(ctx, t, request.ack, counts);
  let running = runningBy.reduce((a, b) => a + b, 0);
  const claimed: ClaimedJob[] = [];
  let bytes = 0;
  let full = false; // what is left of maxBytes cannot take the next job
  let drained = true; // every partition's ready list was found empty, or left so
  let capped = false; // a call found the running attempts at the cap after it
  let expired = 0; // jobs that expired at the claim's start
  const order = ack.first(ctx.rotation.order(ctx.layout.size));
  let visited = 0;
  for (const p of order) {
    visited += 1;
    if (counts && counts.ready[p] === 0) continue; // nothing ready there when counted: no call
    // this partition may fill what the others leave of the cap
    const room = runningBy.length > 0 ? maxRunning - (running - runningBy[p]!) : maxRunning;
    const k = topicKeys(p, t.name, ctx.layout);
    let emptied = false; // this partition's last call left its ready list empty
    for (let more = room > 0; more && !full && claimed.length < count;) {
      const rest = maxBytes - bytes;
      const strict = claimed.length > 0; // the first job gets through whatever its size, no later one
      const call = script.claimJobs(claimKeys(ctx, t, p), {
        ...claimArgs(ctx, t, { at, count: count - claimed.length, maxRunning: room, left: rest, strict, start }),
        acks: ack.take(p),
      });
      const [now, , , stopped, empty, atCap, gone, codes, ...items] = await run(ctx.redis, call);
      running -= ack.settle(p, codes); // the slot of an ack it carried is free for the partitions after it
      expired += gone;
      bytes += await handOut(ctx, t, { bodiesKey: k.bodies, now, items }, claimed);
      running += items.length;
      more = stopped === 1;
      emptied = empty === 1;
      if (atCap === 1) capped = true;
      // stopped at a budget that was all that was left of maxBytes (not at one call's share)
      if (more && (rest <= SCRIPT_CALL_BYTES || (strict && items.length === 0))) full = true;
      if (bytes >= maxBytes) full = true;
    }
    if (!emptied) drained = false;
    if (full || claimed.length >= count) break;
  }
  // partitions not visited had jobs ready when counted (or, on one partition, the call says)
  if (order.slice(visited).some((p) => !counts || counts.ready[p]! > 0)) drained = false;
  const atCap = capped || (runningBy.length > 0 && running >= maxRunning);
  const acked = await ack.outcome();
  return { jobs: claimed, heldUntil: null, drained, capped: atCap, expired, ...(acked ? { ack: acked } : {}) };
}

/** The ack a claim carries (ClaimRequest.ack), as claimJobs sends it. */
interface AckCarrier {
  /** `order` with the ack's partition first. */
  first(order: number[]): number[];
  /** The acks for a call to partition `p`: the ack in the first call to its partition, none otherwise. */
  take(p: number): script.AttemptArg[];
  /** Settles the ack with the acked codes of the call to `p` that carried it; 1 when its slot came free, else 0. */
  settle(p: number, codes: script.AckReply | 0): number;
  /** Its outcome (undefined: none was asked for), sent on its own when no call carried it. */
  outcome(): Promise<AckOutcome | undefined>;
}

/**
 * The carrier of `ack` (an attempt of topic `t` to end as done before the claim). It goes with the first call, to its
 * job's partition, and is ended before that call claims: its slot is free for the claim. Where that partition had
 * nothing ready when counted (`counts`, null on one partition), it goes first, on its own, and a done one leaves its
 * partition's running count one less.
 */
async function ackCarrier(
  ctx: EngineContext,
  t: TopicConfig,
  ack: ClaimRequest['ack'],
  counts: { running: number[]; ready: number[] } | null,
): Promise<AckCarrier> {
  let pending = ack && { ...ack, partition: ctx.layout.placeOf(t, ack.id) };
  let outcome: Promise<AckOutcome> | undefined;
  if (pending && counts && counts.ready[pending.partition] === 0) {
    const done = await ackJob(ctx, t.name, pending.id, pending.ref);
    if (done === 'done') counts.running[pending.partition]! -= 1;
    outcome = Promise.resolve(done);
    pending = undefined;
  }
  let carried: typeof pending;
  return {
    first: (order) => (pending ? [pending.partition, ...order.filter((p) => p !== pending!.partition)] : order),
    take(p) {
      if (pending?.partition !== p) return [];
      carried = pending;
      pending = undefined;
      return [attemptArg(carried.id, carried.ref)];
    },
    settle(p, codes) {
      if (!carried) return 0;
      const code = codes === 0 ? undefined : codes[0];
      outcome = carriedAck(ctx, t, p, carried, code);
      carried = undefined;
      return code === OUTCOME.ACKED || code === OUTCOME.ACKED_NOTIFY ? 1 : 0;
    },
    // one no call carried (the claim stopped before its partition): on its own
    outcome: () => (pending ? ackJob(ctx, t.name, pending.id, pending.ref) : (outcome ?? Promise.resolve(undefined))),
  };
}

/**
 * The outcome of an ack a claim call of partition `p` carried, whose code is `code`: a done end that
 * notifies has its callback's job added first (as ackBatch does); one the partition does not hold
 * while the partition count changes (or a reply without its code) goes the way of any ack, to its
 * former partition too (as ackBatch sends it).
 */
async function carriedAck(
  ctx: EngineContext,
  t: TopicConfig,
  p: number,
  ack: { id: string; ref: AttemptRef },
  code: script.AckReply[number] | undefined,
): Promise<AckOutcome> {
  const elsewhere = code === REFUSAL.NOT_FOUND && ctx.layout.formerPlaceOf(t, ack.id) !== null;
  if (code === undefined || elsewhere) return ackJob(ctx, t.name, ack.id, ack.ref);
  if (code === OUTCOME.ACKED_NOTIFY) await notifyNow(ctx, t.name, p);
  return toAckOutcome(code);
}

/**
 * A claim by `claim` after the request's ack (if any) on its own: for claims whose script carries no ack (flow), or
 * whose calls count from a grant's time (rate limits).
 */
async function ackedFirst<C extends Claim>(
  ctx: EngineContext,
  t: TopicConfig,
  request: ClaimRequest,
  claim: (rest: Omit<ClaimRequest, 'ack'>) => Promise<C>,
): Promise<C> {
  const { ack, ...rest } = request;
  if (!ack) return claim(rest);
  const outcome = await ackJob(ctx, t.name, ack.id, ack.ref);
  return { ...(await claim(rest)), ack: outcome };
}

/**
 * What a claim got: the jobs, and on a flow topic the earliest time a key its pace held back may
 * start again (null: none held). `drained`: the claim left no job ready (or the topic is paused):
 * a claim made now would get nothing; false when it may (the claim stopped at its count, bytes or
 * the topic's concurrency), and always on a flow topic. `capped`: the topic's running attempts
 * were at `maxRunning` after it (a flow topic: always true, as it cannot tell), so further claims
 * wait for attempts to end.
 */
/**
 * What a claim asks for: up to `count` jobs, the topic's running attempts kept at most `maxRunning`,
 * the bodies under `maxBytes` (SCRIPT_CALL_BYTES when left out); `at`: the Redis time (ms) the
 * claim counts as made; `start`: the attempts are started in the same script call.
 */
export interface ClaimRequest {
  count: number;
  maxRunning: number;
  maxBytes?: number;
  at?: number;
  start?: boolean;
  /**
   * An attempt of the topic to end as done first (a handler that acks its last job and claims its next): in the
   * claim's first script call to its job's partition, else on its own.
   */
  ack?: { id: string; ref: AttemptRef };
}

export interface Claim {
  jobs: ClaimedJob[];
  heldUntil: number | null;
  drained: boolean;
  capped: boolean;
  /** Jobs a claim that starts what it claims found due after their expiry: ended as expired, not handed out. */
  expired: number;
  /** The outcome of the request's ack, when it had one. */
  ack?: AckOutcome;
}

/**
 * The arguments of a claim script call (claimJobs-7, claimFlow-6): `left` of the caller's bytes, at most one call's
 * budget.
 */
function claimArgs(
  ctx: EngineContext,
  t: TopicConfig,
  c: { at: number | undefined; count: number; maxRunning: number; left: number; strict: boolean; start: boolean },
) {
  return {
    clock: c.at ?? ctx.clock(),
    count: c.count,
    maxRunning: c.maxRunning,
    ttrMs: t.ttrMs,
    nonce: randomHex(8),
    maxBytes: Math.max(0, Math.min(SCRIPT_CALL_BYTES, c.left)),
    strict: c.strict,
    retentionMs: ctx.config.retentionMs,
    start: c.start,
  };
}

/**
 * The claimed items of one script call as jobs, appended to `claimed`, with the bodies kept apart
 * read by a plain HMGET; returns the bytes of the bodies handed out.
 */
async function handOut(
  ctx: EngineContext,
  t: TopicConfig,
  call: { bodiesKey: BodiesKey; now: number; items: readonly script.ClaimedItem[] },
  claimed: ClaimedJob[],
): Promise<number> {
  const { bodiesKey, now, items } = call;
  const apart = items.filter((item) => item[5] === null).map((item) => item[0]);
  const read = new Map(apart.map((id, i) => [id, i]));
  const bodies = await bodiesApart(ctx, bodiesKey, apart);
  let bytes = 0;
  for (const item of items) {
    // null only when, since the claim, the job was cancelled without retention (or cancelled
    // and created anew with a small body): that attempt is no longer live (a handler's start
    // would refuse it), so it is not handed out
    const body = item[5] ?? bodies[read.get(item[0])!] ?? null;
    if (body === null) continue;
    claimed.push(toClaimed(t, now, item, body));
    bytes += Buffer.byteLength(body);
  }
  return bytes;
}

/**
 * claimJobs for a flow topic (lua/claimFlow-6.lua): round its keys in its one partition, each key
 * within its limits, the topic within `maxRunning`; calls again while a call stopped at its byte
 * budget with room left. `heldUntil`: the earliest time a key held by its pace may start again
 * (the engine makes sure a sweep looks then), null when none was held.
 */
async function claimFlow(
  ctx: EngineContext,
  t: TopicConfig,
  flow: FlowDefaults,
  request: ClaimRequest,
): Promise<Claim> {
  const { count, maxRunning, maxBytes = SCRIPT_CALL_BYTES, at, start = false } = request;
  const p = ctx.layout.placeOf(t, '');
  const k = topicKeys(p, t.name, ctx.layout);
  const claimed: ClaimedJob[] = [];
  let bytes = 0;
  let heldUntil: number | null = null;
  let expired = 0;
  for (let more = true; more && claimed.length < count && bytes < maxBytes;) {
    const left = maxBytes - bytes;
    const strict = claimed.length > 0;
    const call = script.claimFlow(
      [k.running, k.jobs, k.bodies, k.delayed, k.done, latenessKey(p, t.name, ctx.layout)],
      {
        ...claimArgs(ctx, t, { at, count: count - claimed.length, maxRunning, left, strict, start }),
        flow,
      },
    );
    const [now, , , stopped, held, gone, ...items] = await run(ctx.redis, call);
    expired += gone;
    if (held !== null && (heldUntil === null || held < heldUntil)) heldUntil = held;
    bytes += await handOut(ctx, t, { bodiesKey: k.bodies, now, items }, claimed);
    // stopped at a budget that was all that was left of maxBytes: full
    more = stopped === 1 && left > SCRIPT_CALL_BYTES && !(strict && items.length === 0);
  }
  return { jobs: claimed, heldUntil, drained: false, capped: true, expired }; // it cannot tell: the handlers claim on
}

/**
 * What a paced claim got: the jobs (and a flow topic's heldUntil, see Claim), and when the rate limit held it back, the
 * ms until more tokens are due.
 */
export interface PacedClaim extends Claim {
  /**
   * ms until the rate limit grants more starts, when it granted fewer than asked for; null when it did not hold the
   * claim back (or the topic has none).
   */
  waitMs: number | null;
}

/**
 * claimJobs within topic `t`'s rate limit, shared by every caller through Redis: takes up to
 * `count` start tokens first (one script call), claims at most that many as of the grant's time,
 * and gives the unused back. A topic without a rate limit is claimed exactly as by claimJobs (no
 * further calls). `start`: the attempts are started too (see claimJobs).
 */
export async function claimPaced(
  ctx: EngineContext,
  t: TopicConfig,
  request: Omit<ClaimRequest, 'at'>,
): Promise<PacedClaim> {
  const { count } = request;
  if (!t.rateLimit || count <= 0) return { ...(await claimJobs(ctx, t, request)), waitMs: null };
  // the claim's calls count from the grant's time: the ack goes on its own, first
  if (request.ack) return ackedFirst(ctx, t, request, (rest) => claimPaced(ctx, t, rest));
  const key = [topicRateKey(t, ctx.layout)] as const;
  const [granted, slot, waitMs, grantedAt] = await run(
    ctx.redis,
    script.takeTokens(key, { clock: ctx.clock(), count: t.rateLimit.count, perMs: t.rateLimit.perMs, wanted: count }),
  );
  if (granted === 0)
    return { jobs: [], heldUntil: null, drained: false, capped: false, expired: 0, waitMs: Math.max(1, waitMs) };
  // The jobs start at the grant's time (their claim time, lateness and ttr deadline count from it),
  // so the starts the window counts are the starts the jobs record, whatever the claim's own delay.
  // A claim that throws keeps its tokens: its reply may be lost after it claimed, and keeping them errs on the slow
  // side.
  const claim = await claimJobs(ctx, t, { ...request, count: granted, at: grantedAt });
  const { jobs } = claim;
  const unused = granted - jobs.length;
  if (unused > 0)
    await run(
      ctx.redis,
      script.returnTokens(key, { slot, n: unused, intervalMs: t.rateLimit.perMs / t.rateLimit.count }),
    );
  // fewer jobs than tokens: what stopped the claim was not the limit
  return { ...claim, waitMs: granted < count && unused === 0 ? Math.max(1, waitMs) : null };
}

/** The script arguments naming attempt `ref` of job `id`. */
const attemptArg = (id: string, ref: AttemptRef): script.AttemptArg => ({ id, attempt: ref.attempt, claim: ref.claim });

// Attempts an ackJobs call ends at most: a call's work stays bounded (each ack rewrites one
// header, or deletes one record), and its Redis time well under a millisecond.
const ACK_BATCH = 100;

interface PendingAck {
  topic: string;
  id: string;
  partition: number;
  ref: AttemptRef;
  resolve(outcome: AckOutcome): void;
  reject(error: unknown): void;
}

// The acks each engine made in this turn of the event loop and has not sent yet, by clock; sent
// together (sendAcks) once the turn is over.
const pendingAcks = new WeakMap<EngineContext, Map<ClockArg, PendingAck[]>>();

/**
 * Ends the claimed attempt `ref` of job topic/id as done. The acks an engine makes in one turn of
 * the event loop (a handler whose jobs end together, a worker acking what it claimed) go to Redis
 * together: one ackJobs call per topic and partition and up to ACK_BATCH attempts, sent once the
 * turn is over. Each ack answers for its own attempt; a call that fails fails every ack it carried.
 */
export function ackJob(ctx: EngineContext, topic: string, id: string, ref: AttemptRef): Promise<AckOutcome> {
  let pending = pendingAcks.get(ctx);
  if (!pending) {
    const turn = (pending = new Map<ClockArg, PendingAck[]>());
    pendingAcks.set(ctx, turn);
    setImmediate(() => {
      pendingAcks.delete(ctx);
      for (const [clock, acks] of turn) sendAcks(ctx, clock, acks);
    });
  }
  const clock = ctx.clock();
  const acks = pending.get(clock) ?? [];
  pending.set(clock, acks);
  return new Promise<AckOutcome>((resolve, reject) =>
    acks.push({
      topic,
      id,
      partition: ctx.layout.placeOf(ctx.config.topics.get(topic) ?? topic, id),
      ref,
      resolve,
      reject,
    }),
  );
}

/** Sends acks made at one clock: an ackJobs call per topic, partition and ACK_BATCH attempts, all at once. */
function sendAcks(ctx: EngineContext, clock: ClockArg, acks: readonly PendingAck[]): void {
  for (const [partition, batches] of batchesByPartition(
    acks,
    { partition: (a) => a.partition, topic: (a) => a.topic },
    ACK_BATCH,
  )) {
    for (const batch of batches) void ackBatch(ctx, partition, clock, batch);
  }
}

/**
 * One ackJobs call for acks of one topic and partition; answers each, or fails each with the call's
 * error. While the partition count changes, the attempts of jobs not in their current partition
 * are acked in their former ones (one more call each).
 */
async function ackBatch(
  ctx: EngineContext,
  partition: number,
  clock: ClockArg,
  batch: readonly PendingAck[],
): Promise<void> {
  const k = topicKeys(partition, batch[0]!.topic, ctx.layout);
  try {
    const reply = await run(
      ctx.redis,
      script.ackJobs([k.jobs, k.bodies, k.running, k.done], {
        clock,
        retentionMs: ctx.config.retentionMs,
        attempts: batch.map((a) => attemptArg(a.id, a.ref)),
      }),
    );
    // a done end that notifies (ACKED_NOTIFY) has its callback's job added before the acks answer
    if (reply.includes(OUTCOME.ACKED_NOTIFY)) await notifyNow(ctx, batch[0]!.topic, partition);
    const elsewhere: PendingAck[] = [];
    batch.forEach((a, i) => {
      const former =
        reply[i] === REFUSAL.NOT_FOUND && partition < ctx.layout.count
          ? ctx.layout.formerPlaceOf(ctx.config.topics.get(a.topic) ?? a.topic, a.id)
          : null;
      if (former === null) a.resolve(toAckOutcome(reply[i]!));
      else elsewhere.push({ ...a, partition: former });
    });
    if (elsewhere.length > 0)
      await Promise.all([...groupBy(elsewhere, (a) => a.partition)].map(([p, acks]) => ackBatch(ctx, p, clock, acks)));
  } catch (error) {
    for (const a of batch) a.reject(error);
  }
}

/**
 * Ends the claimed attempt `ref` of job `id` of topic `t` as failed: a retry after the backoff (or `retryAfterMs`), or
 * dead.
 */
export async function failJob(
  ctx: EngineContext,
  t: TopicConfig,
  id: string,
  ref: AttemptRef,
  failure: { error: string; retryAfterMs?: number | undefined },
): Promise<FailOutcome> {
  const { error, retryAfterMs } = failure;
  const random = ctx.random();
  // while the partition count changes, a job not in its current partition is in its former one
  const { reply, looked } = await inPlaces(ctx, t, id, (k) =>
    script.failJob([k.jobs, k.running, k.delayed, k.dead], {
      clock: ctx.clock(),
      ...attemptArg(id, ref),
      error,
      maxAttempts: t.maxAttempts,
      backoff: t.backoff,
      random,
      ...(retryAfterMs !== undefined ? { retryAfterMs } : {}),
    }),
  );
  // a dead end that notifies has its callback's job added before the fail answers
  if (reply[0] === OUTCOME.DEAD_LETTERED && reply[1] === 1) await notifyNow(ctx, t.name, looked.at(-1)!);
  return toFailOutcome(reply);
}

type Ref = Pick<ClaimedJob, 'topic' | 'id'> & AttemptRef;
const slotOf = (ctx: EngineContext) => ({
  partition: (job: Ref) => ctx.layout.placeOf(ctx.config.topics.get(job.topic) ?? job.topic, job.id),
  topic: (job: Ref) => job.topic,
});

/**
 * Gives claimed jobs back to the front of their ready lists without counting the attempt, after
 * their handler could not be invoked (`reason`); a job given back 5 times in a row is failed
 * instead (its attempt counts, with the reason as lastError). Returns how many were given back.
 */
export async function releaseJobs(
  ctx: EngineContext,
  jobs: readonly Ref[],
  reason = 'the handler invoke failed',
): Promise<number> {
  // while the partition count changes, a job may be in its former partition: released there too
  // (a job is in one of the two; the other call finds nothing of it)
  const formerOf = (job: Ref) => ctx.layout.formerPlaceOf(ctx.config.topics.get(job.topic) ?? job.topic, job.id);
  const inFormer = ctx.layout.former > 0 ? jobs.filter((job) => formerOf(job) !== null) : [];
  let released =
    inFormer.length > 0
      ? await releaseIn(ctx, inFormer, { partition: (job) => formerOf(job)!, topic: (job) => job.topic }, reason)
      : 0;
  released += await releaseIn(ctx, jobs, slotOf(ctx), reason);
  return released;
}

/** releaseJobs in the partitions `slot` gives. */
async function releaseIn(
  ctx: EngineContext,
  jobs: readonly Ref[],
  slot: { partition(job: Ref): number; topic(job: Ref): string },
  reason: string,
): Promise<number> {
  let released = 0;
  for (const [partition, batches] of batchesByPartition(jobs, slot, RELEASE_BATCH)) {
    for (const batch of batches) {
      const t = ctx.config.topics.get(batch[0]!.topic);
      if (!t) throw new Error(`release of jobs of unknown topic ${batch[0]!.topic}`);
      const k = topicKeys(partition, t.name, ctx.layout);
      // a call that reached its byte budget looked at the first `looked`: the rest go in the next
      for (let rest = batch; rest.length > 0;) {
        const call = script.releaseJobs([k.jobs, k.running, k.ready, k.delayed, k.dead], {
          clock: ctx.clock(),
          maxAttempts: t.maxAttempts,
          backoff: t.backoff,
          random: ctx.random(),
          reason,
          jobs: rest.map((j) => attemptArg(j.id, j)),
          maxBytes: SCRIPT_CALL_BYTES,
        });
        const [given, , , looked] = await run(ctx.redis, call);
        released += given;
        rest = rest.slice(atLeastOne(looked, 'releaseJobs'));
      }
    }
  }
  return released;
}

/** What a start answers: which attempts are live (run those), in order, and the clock they were checked on. */
export interface Started {
  live: boolean[];
  /** How many of the attempts were due after their job's expiry: the jobs ended as expired, nothing to run. */
  expired: number;
  /**
   * The Redis clock (or the fixed test clock) of the latest of the start's calls, epoch ms; null when no attempt was
   * sent.
   */
  now: number | null;
}

/**
 * Marks the claimed attempts of topic `topic` that are still live as started (a timeout counts
 * them from now on) and says, in order, which are: one script call per partition, all at once.
 */
export async function startAttempts(
  ctx: EngineContext,
  topic: string,
  jobs: readonly (Pick<ClaimedJob, 'id'> & AttemptRef)[],
): Promise<Started> {
  const live: boolean[] = new Array<boolean>(jobs.length).fill(false);
  const t = ctx.config.topics.get(topic) ?? topic;
  let now: number | null = null;
  let expired = 0;
  // not in their current partition: in their former one, while the partition count changes
  const elsewhere: number[] = [];
  const startIn = async (byPartition: Map<number, number[]>) => {
    await Promise.all(
      [...byPartition].map(async ([partition, indexes]) => {
        const k = topicKeys(partition, topic, ctx.layout);
        // a call that reached its byte budget answered for the first attempts: the rest go in the next
        for (let rest = indexes; rest.length > 0;) {
          const reply = await run(
            ctx.redis,
            script.startAttempts([k.jobs, latenessKey(partition, topic, ctx.layout), k.running, k.ready, k.done], {
              clock: ctx.clock(),
              retentionMs: ctx.config.retentionMs,
              attempts: rest.map((i) => attemptArg(jobs[i]!.id, jobs[i]!)),
              maxBytes: SCRIPT_CALL_BYTES,
            }),
          );
          now = Math.max(now ?? reply[0], reply[0]);
          for (let j = 1; j < reply.length; j++) {
            live[rest[j - 1]!] = reply[j] === OUTCOME.STARTED;
            if (reply[j] === OUTCOME.EXPIRED) expired += 1;
            if (reply[j] === REFUSAL.NOT_FOUND && partition < ctx.layout.count && ctx.layout.former > 0)
              elsewhere.push(rest[j - 1]!);
          }
          rest = rest.slice(atLeastOne(reply.length - 1, 'startAttempts'));
        }
      }),
    );
  };
  await startIn(
    groupBy(
      jobs.map((_, i) => i),
      (i) => ctx.layout.placeOf(t, jobs[i]!.id),
    ),
  );
  if (elsewhere.length > 0) await startIn(groupBy(elsewhere, (i) => ctx.layout.formerPlaceOf(t, jobs[i]!.id)!));
  return { live, now, expired };
}

/**
 * A flow topic's claim that left keys held by their pace: a sweep must look when the first may go (it puts them back in
 * turn).
 */
async function heldBack<C extends PacedClaim>(ctx: EngineContext, claim: C): Promise<C> {
  if (claim.heldUntil !== null) await wakeFor(ctx, claim.heldUntil);
  return claim;
}

/** The engine's attempt operations: the fan-out and the topic handlers (Engine in ./engine.ts lists them). */
export const attemptOps = {
  /**
   * Claims up to `count` ready jobs for one attempt each, keeping the topic's running attempts at most `maxRunning`
   * (default: its concurrency) and the bodies under `maxBytes`; `waitMs`: how long the topic's rateLimit holds further
   * claims back (null when it does not).
   */
  async claimPaced(
    this: object,
    topic: string,
    count: number,
    maxRunning?: number,
    maxBytes = SCRIPT_CALL_BYTES,
  ): Promise<PacedClaim> {
    const ctx = contextOf(this);
    const t = topicOf(ctx, topic);
    return heldBack(ctx, await claimPaced(ctx, t, { count, maxRunning: maxRunning ?? t.concurrency, maxBytes }));
  },

  /** As claimPaced, the jobs only. */
  async claim(
    this: object,
    topic: string,
    count: number,
    maxRunning?: number,
    maxBytes = SCRIPT_CALL_BYTES,
  ): Promise<ClaimedJob[]> {
    return (await attemptOps.claimPaced.call(this, topic, count, maxRunning, maxBytes)).jobs;
  },

  /**
   * As claim, each attempt started in the same script call (lateness recorded): for a handler that runs what it claims
   * at once.
   */
  async claimStarted(this: object, topic: string, count: number): Promise<ClaimedJob[]> {
    return (await attemptOps.claimStartedCounted.call(this, topic, count)).jobs;
  },

  /**
   * Acks attempt `ref` of job `id` (done), then claims and starts up to `count` jobs as claimStartedCounted: for a
   * handler that takes its next job as it finishes its last, in one script call where the topic allows (not a flow
   * or rate-limited topic, and the job's partition is one the claim calls).
   */
  async ackAndClaimStarted(
    this: object,
    topic: string,
    id: string,
    ref: AttemptRef,
    count: number,
  ): Promise<{ ack: AckOutcome; jobs: ClaimedJob[]; expired: number }> {
    const ctx = contextOf(this);
    const t = topicOf(ctx, topic);
    const claim = await claimPaced(ctx, t, { count, maxRunning: t.concurrency, start: true, ack: { id, ref } });
    const { jobs, expired } = await heldBack(ctx, claim);
    return { ack: claim.ack!, jobs, expired };
  },

  /** As claimStarted, with how many jobs the claim found due after their expiry (ended as expired, not handed out). */
  async claimStartedCounted(
    this: object,
    topic: string,
    count: number,
  ): Promise<{ jobs: ClaimedJob[]; expired: number }> {
    const ctx = contextOf(this);
    const t = topicOf(ctx, topic);
    const claim = await claimPaced(ctx, t, { count, maxRunning: t.concurrency, start: true });
    const { jobs, expired } = await heldBack(ctx, claim);
    return { jobs, expired };
  },

  /**
   * Marks claimed attempts still live as started and records their lateness; says, in order, which are (run only
   * those).
   */
  async start(this: object, topic: string, jobs: readonly (Pick<ClaimedJob, 'id'> & AttemptRef)[]): Promise<boolean[]> {
    const ctx = contextOf(this);
    return (await startAttempts(ctx, topicOf(ctx, topic).name, jobs)).live;
  },

  /**
   * As start, and the clock the attempts were checked on (Redis's, or the fixed test clock): a handler's offset to it,
   * without a TIME request of its own.
   */
  startTimed(this: object, topic: string, jobs: readonly (Pick<ClaimedJob, 'id'> & AttemptRef)[]): Promise<Started> {
    const ctx = contextOf(this);
    return startAttempts(ctx, topicOf(ctx, topic).name, jobs);
  },

  /** Ends a claimed attempt as done; `stale` when that claim already ended. */
  ack(this: object, topic: string, id: string, attempt: AttemptRef): Promise<AckOutcome> {
    return ackJob(contextOf(this), topic, id, attempt);
  },

  /**
   * Ends a claimed attempt as failed: a retry after the backoff (or `retryAfterMs`), or dead; wakes the sweeper for the
   * retry.
   */
  async fail(
    this: object,
    topic: string,
    id: string,
    attempt: AttemptRef,
    error: string,
    retryAfterMs?: number,
  ): Promise<FailOutcome> {
    const ctx = contextOf(this);
    const outcome = await failJob(ctx, topicOf(ctx, topic), id, attempt, { error, retryAfterMs });
    if (outcome.outcome === 'retry' && outcome.wake) await wakeFor(ctx, outcome.runAt);
    return outcome;
  },

  /** Gives claimed jobs back to the front of their ready lists without counting the attempt. */
  release(this: object, jobs: (Pick<ClaimedJob, 'topic' | 'id'> & AttemptRef)[], reason?: string): Promise<number> {
    return releaseJobs(contextOf(this), jobs, reason);
  },
};
