/**
 * Schedules while the partition count changes (Layout in ./keys.ts): each schedule of a partition
 * of the former layout moves to its partition of the current one, so the former layout empties
 * out. A script touches one partition's keys only, so a move is three scripts, each atomic:
 *   1. freeze, in the former partition (lua/deleteSchedule-8.lua 'freeze'): the partition is closed
 *      to new ids (MOVED_FIELD); the occurrences waiting for their first attempt are withdrawn, the
 *      record leaves the schedule-next zset and is marked frozen: no sweep advances it there, every
 *      write of it there is refused (MOVED). It replies the frozen record. A schedule with an
 *      occurrence running or waiting for a retry there is not frozen (BUSY): moved by a later sweep.
 *   2. adopt, in the current partition (lua/putSchedule-9.lua 'adopt'): the schedule made there from
 *      the frozen record, with the withdrawn occurrences made again under their ids and due times;
 *      unless the partition holds it already (adopted before) or its gone mark (adopted, then
 *      deleted): then nothing changes.
 *   3. drop, in the former partition (lua/deleteSchedule-8.lua 'drop'): the frozen record deleted.
 * A mover killed between two steps leaves a frozen record, which the next move of that schedule
 * (the next sweep, or a change of it by id) takes up at step 1, which replies the same frozen
 * record again: every step is idempotent, so two movers at once make one copy. Between steps 1 and
 * 2 no occurrence of it waits anywhere; an occurrence that fell due then is made again at step 2,
 * due, and runs at the next sweep.
 * With durability `replica`, each step waits for a replica before the next: a failover never
 * brings back a live record in the former partition beside its copy (a freeze lost) nor loses the
 * copy once the frozen record is dropped (an adopt lost); a step not confirmed leaves the move to
 * the next one, from where it stopped.
 * A change by id (put, pause, resume, delete) first moves the schedule, then acts in its current
 * partition; in the former one while it cannot be moved (BUSY), where it lives. An engine that
 * does not know of the change meets a closed partition of the former layout, which refuses (MOVED,
 * with the current count): it acts in the layout that count gives.
 */
import type { TopicConfig } from '../core/queue-config';
import { SCRIPT_CALL_BYTES } from '../core/limits';
import { REFUSAL, RELAYOUT } from './codes';
import type { EngineContext } from './context';
import { confirmReplicated, NotReplicatedError } from './durable';
import { leaveGroups } from './groups';
import { Layout, scheduleKeys, scheduleWriteKeys, topicKeys } from './keys';
import { run } from './script-runner';
import * as script from './scripts';

/**
 * The partitions of one layout a change by id wrote, and those whose answer it read without writing: what a replica
 * must confirm (Engine.durable).
 */
export interface ScheduleTouched {
  layout: Layout;
  changed: number[];
  covering: number[];
}

/** What one move of a schedule did: moved (or found moved), absent from the former partition, or not movable now. */
export interface MoveResult {
  outcome: 'moved' | 'absent' | 'busy';
  /** The earliest due time of the occurrences it made again in the current partition, or null. */
  dueAt: number | null;
}

/** Slot (0-based) of a frozen record's JSON holding the schedule's group (includes/schedules.lua S_GROUP). */
const GROUP_SLOT = 8;
/** Rounds of move and act a change by id tries while the schedule moves under it. */
const MOVE_ROUNDS = 5;

/** The eight keys of lua/deleteSchedule-8.lua for `topic` in `partition` of `layout`. */
function deleteKeys(partition: number, topic: string, layout: Layout) {
  const sk = scheduleKeys(partition, topic, layout);
  const k = topicKeys(partition, topic, layout);
  return [sk.schedules, sk.ids, sk.next, k.jobs, k.bodies, k.delayed, k.running, k.done] as const;
}

/**
 * Moves schedule `id` of topic `t` from its partition of the former layout of `ctx.layout` to its
 * current one (the three steps above); `touched` gets the partitions it wrote. Call it only while a
 * change is under way and `t` is not a flow topic (formerPlaceOf not null).
 */
export async function moveSchedule(
  ctx: EngineContext,
  t: TopicConfig,
  id: string,
  touched: ScheduleTouched[] = [],
): Promise<MoveResult> {
  const layout = ctx.layout;
  const from = layout.formerPlaceOf(t, id);
  if (from === null) return { outcome: 'absent', dueAt: null };
  const to = layout.placeOf(t, id);
  const frozen = await run(
    ctx.redis,
    script.freezeSchedule(deleteKeys(from, t.name, layout), { clock: ctx.clock(), id, count: layout.count }),
  );
  touched.push({ layout, changed: [from], covering: [] });
  if (frozen[0] === REFUSAL.NOT_FOUND) return { outcome: 'absent', dueAt: null };
  if (frozen[0] === RELAYOUT.BUSY) return { outcome: 'busy', dueAt: null };
  const [, version, record] = frozen;
  await replicated(ctx, from);
  const group = (JSON.parse(record) as unknown[])[GROUP_SLOT];
  const keys = scheduleWriteKeys(to, t.name, typeof group === 'string' ? group : '', layout);
  const adopted = await run(ctx.redis, script.adoptSchedule(keys, { clock: ctx.clock(), id, record }));
  touched.push({ layout, changed: [to], covering: [to] });
  let dueAt: number | null = null;
  if (adopted[0] === RELAYOUT.ADOPTED) {
    dueAt = adopted[4];
    // an occurrence made anew from a cancelled job of another group: out of that group
    if (adopted[3].length > 0)
      await leaveGroups(
        ctx,
        adopted[3].map(([occurrence, g, chunk]) => ({ topic: t.name, group: g, id: occurrence, chunk, partition: to })),
      );
  }
  await replicated(ctx, to);
  await run(ctx.redis, script.dropSchedule(deleteKeys(from, t.name, layout), { clock: ctx.clock(), id, version }));
  return { outcome: 'moved', dueAt };
}

/**
 * With durability `replica`, returns once a replica has every change partition `partition` (of ctx's layout) had: a
 * move's step before the next.
 */
async function replicated(ctx: EngineContext, partition: number): Promise<void> {
  const { mode, timeoutMs } = ctx.config.durability;
  if (mode === 'replica') await confirmReplicated(ctx, [partition], [partition], timeoutMs, ctx.layout);
}

/** `ctx` in the layout a closed partition named: `count` partitions now, ctx's count the former. */
function relayout(ctx: EngineContext, count: number): EngineContext {
  if (count === ctx.layout.count)
    throw new Error(`partition closed in the current layout of ${count}: two changes of the partition count at once?`);
  return { ...ctx, layout: new Layout(count, ctx.layout.count, ctx.layout.flowTopics) };
}

/** A schedule script's MOVED answer: act in the layout of `count` partitions. */
export class Moved {
  constructor(readonly count: number) {}
}

/**
 * Runs change `act` of schedule `id` of topic `t` where the schedule lives: while a change is
 * under way, after moving it to its current partition (in its former one while it cannot move);
 * `act` answers Moved when the partition turned it away (the schedule was frozen since, or a
 * closed partition of a layout this engine does not know of), and it is placed and run again.
 * With no change under way, `act` runs at once in the schedule's partition: no command more.
 */
export async function actWhereItLives<R>(
  ctx: EngineContext,
  t: TopicConfig,
  id: string,
  touched: ScheduleTouched[],
  act: (ctx: EngineContext, partition: number) => Promise<R | Moved>,
): Promise<R> {
  let at = ctx;
  for (let round = 0; round < MOVE_ROUNDS; round++) {
    const former = at.layout.formerPlaceOf(t, id);
    let partition = at.layout.placeOf(t, id);
    if (former !== null && (await moveSchedule(at, t, id, touched)).outcome === 'busy') partition = former;
    const answer = await act(at, partition);
    if (!(answer instanceof Moved)) return answer;
    if (answer.count !== at.layout.count) at = relayout(at, answer.count);
  }
  throw new Error(`schedule ${t.name}/${id} moved under ${MOVE_ROUNDS} changes in a row`);
}

/**
 * Schedule `id` of topic `t` as stored, wherever it lives: while a change is under way in its
 * current partition, else in its former one (frozen for its move or not), else in its current one
 * again (it moved between the two reads). In a closed partition of a layout this engine does not
 * know of, in the layout it names.
 */
export async function readWhereItLives(
  ctx: EngineContext,
  t: TopicConfig,
  id: string,
): Promise<script.ScheduleView | null> {
  const read = (at: EngineContext, partition: number) =>
    run(at.redis, script.getSchedule([scheduleKeys(partition, t.name, at.layout).schedules], { id }));
  const current = ctx.layout.placeOf(t, id);
  const first = await read(ctx, current);
  if (typeof first !== 'number') {
    const former = ctx.layout.formerPlaceOf(t, id);
    if (first !== null || former === null) return first;
    const there = await read(ctx, former);
    if (isView(there)) return there;
    const again = await read(ctx, current);
    return isView(again) ? again : null;
  }
  return readWhereItLives(relayout(ctx, first), t, id);
}

/** Whether a getSchedule reply is a schedule's view (not none, nor the count of a closed partition). */
export function isView(reply: script.GetScheduleReply): reply is script.ScheduleView {
  return reply !== null && typeof reply !== 'number';
}

/** What one moveSchedules call did. */
export interface MoveStep {
  /** Schedules moved to their current partition. */
  moved: number;
  /**
   * Schedules that could not move now (an occurrence running or waiting for a retry there, or no replica confirmed a
   * step): a later call moves them.
   */
  busy: number;
  /** Schedules this call did not reach (its limit or byte budget): call again at once. */
  more: boolean;
  /**
   * Schedules are left in the former layout's partitions (the busy ones, or those not reached): the change cannot end
   * yet.
   */
  left: boolean;
  /** Earliest due time of an occurrence a move made again, or null. */
  nextAt: number | null;
}

/** A move a replica did not confirm a step of: not moved now (any other error is thrown). */
function notConfirmed(error: unknown): MoveResult {
  if (error instanceof NotReplicatedError) return { outcome: 'busy', dueAt: null };
  throw error;
}

/**
 * Per topic and former partition (by its schedule ids zset), the id the last call stopped after, so busy schedules
 * never hold back the rest.
 */
const resumeAfter = new Map<string, string>();

/**
 * Moves up to `limit` schedules of the former layout's partitions to their current ones (see
 * above), for every topic without flow control (a flow topic's partition never moves), each
 * partition's from where the last call stopped; says whether schedules are left there. The sweep
 * calls it once a step while a change is under way, and folds `more` and `nextAt` into its result
 * (`into`): an occurrence made again, due, is moved to ready at once.
 */
export async function moveSchedules(
  ctx: EngineContext,
  limit: number,
  into?: { more: boolean; nextAt: number | null },
): Promise<MoveStep> {
  const step: MoveStep = { moved: 0, busy: 0, more: false, left: false, nextAt: null };
  const plain = [...ctx.config.topics.values()].filter((t) => !t.flow);
  let budget = limit;
  for (const t of plain) {
    for (let p = ctx.layout.count; p < ctx.layout.size; p++) {
      if (budget <= 0) {
        step.more = step.left = true;
        continue;
      }
      const sk = scheduleKeys(p, t.name, ctx.layout);
      const after = resumeAfter.get(sk.ids) ?? '';
      const [cut, ...views] = await run(
        ctx.redis,
        script.listSchedules([sk.ids, sk.schedules], { after, limit: budget, maxBytes: SCRIPT_CALL_BYTES }),
      );
      const reachedEnd = cut === 0 && views.length < budget;
      budget -= views.length;
      if (reachedEnd) resumeAfter.delete(sk.ids);
      else resumeAfter.set(sk.ids, views.at(-1)?.[0] ?? after);
      if (!reachedEnd || after !== '') step.more = step.left = true; // ids not reached, here or before `after`
      // a move no replica confirmed a step of in time is taken up where it stopped by a later call
      const results = await Promise.all(views.map(([id]) => moveSchedule(ctx, t, id).catch(notConfirmed)));
      for (const { outcome, dueAt } of results) {
        if (outcome === 'moved') step.moved += 1;
        if (outcome === 'busy') {
          step.busy += 1;
          step.left = true;
        }
        if (dueAt !== null && (step.nextAt === null || dueAt < step.nextAt)) step.nextAt = dueAt;
      }
    }
  }
  if (into) {
    if (step.more) into.more = true;
    if (step.nextAt !== null && (into.nextAt === null || step.nextAt < into.nextAt)) into.nextAt = step.nextAt;
  }
  return step;
}
