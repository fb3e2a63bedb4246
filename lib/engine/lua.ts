import { setTimeout as sleep } from 'node:timers/promises';
import { Cluster, type ChainableCommander, type Redis } from 'ioredis';
import argv from '../../lua/includes/argv.lua';
import attempts from '../../lua/includes/attempts.lua';
import budget from '../../lua/includes/budget.lua';
import buckets from '../../lua/includes/buckets.lua';
import cancel from '../../lua/includes/cancel.lua';
import clock from '../../lua/includes/clock.lua';
import codes from '../../lua/includes/codes.lua';
import groupCancel from '../../lua/includes/groupCancel.lua';
import groups from '../../lua/includes/groups.lua';
import head from '../../lua/includes/head.lua';
import job from '../../lua/includes/job.lua';
import occurrences from '../../lua/includes/occurrences.lua';
import schedules from '../../lua/includes/schedules.lua';
import ackJob from '../../lua/ackJob-4.lua';
import addJobs from '../../lua/addJobs-5.lua';
import cancelJob from '../../lua/cancelJob-5.lua';
import cancelGroup from '../../lua/cancelGroup-6.lua';
import claimJobs from '../../lua/claimJobs-6.lua';
import endFanout from '../../lua/endFanout-1.lua';
import failJob from '../../lua/failJob-4.lua';
import getJob from '../../lua/getJob-2.lua';
import holdLease from '../../lua/holdLease-4.lua';
import leaveGroup from '../../lua/leaveGroup-2.lua';
import listGroup from '../../lua/listGroup-4.lua';
import listJobs from '../../lua/listJobs-4.lua';
import listReady from '../../lua/listReady-4.lua';
import moveDue from '../../lua/moveDue-7.lua';
import redriveJobs from '../../lua/redriveJobs-3.lua';
import releaseLease from '../../lua/releaseLease-4.lua';
import releaseJobs from '../../lua/releaseJobs-5.lua';
import rescheduleJob from '../../lua/rescheduleJob-3.lua';
import startAttempts from '../../lua/startAttempts-1.lua';
import startFanout from '../../lua/startFanout-1.lua';
import syncPoint from '../../lua/syncPoint-1.lua';
import recordStarts from '../../lua/recordStarts-1.lua';
import wakeSweeper from '../../lua/wakeSweeper-4.lua';
import putSchedule from '../../lua/putSchedule-9.lua';
import advanceSchedule from '../../lua/advanceSchedule-8.lua';
import deleteSchedule from '../../lua/deleteSchedule-8.lua';
import dueSchedules from '../../lua/dueSchedules-2.lua';
import getSchedule from '../../lua/getSchedule-1.lua';
import listSchedules from '../../lua/listSchedules-2.lua';
import takeTokens from '../../lua/takeTokens-1.lua';
import returnTokens from '../../lua/returnTokens-1.lua';

/** Every script: its file in lua/, how many KEYS it takes, and its source. */
export const SCRIPTS = {
  addJobs: { file: 'addJobs-5.lua', numberOfKeys: 5, source: addJobs },
  getJob: { file: 'getJob-2.lua', numberOfKeys: 2, source: getJob },
  cancelJob: { file: 'cancelJob-5.lua', numberOfKeys: 5, source: cancelJob },
  rescheduleJob: { file: 'rescheduleJob-3.lua', numberOfKeys: 3, source: rescheduleJob },
  claimJobs: { file: 'claimJobs-6.lua', numberOfKeys: 6, source: claimJobs },
  ackJob: { file: 'ackJob-4.lua', numberOfKeys: 4, source: ackJob },
  failJob: { file: 'failJob-4.lua', numberOfKeys: 4, source: failJob },
  releaseJobs: { file: 'releaseJobs-5.lua', numberOfKeys: 5, source: releaseJobs },
  startAttempts: { file: 'startAttempts-1.lua', numberOfKeys: 1, source: startAttempts },
  moveDue: { file: 'moveDue-7.lua', numberOfKeys: 7, source: moveDue },
  redriveJobs: { file: 'redriveJobs-3.lua', numberOfKeys: 3, source: redriveJobs },
  listJobs: { file: 'listJobs-4.lua', numberOfKeys: 4, source: listJobs },
  listReady: { file: 'listReady-4.lua', numberOfKeys: 4, source: listReady },
  cancelGroup: { file: 'cancelGroup-6.lua', numberOfKeys: 6, source: cancelGroup },
  leaveGroup: { file: 'leaveGroup-2.lua', numberOfKeys: 2, source: leaveGroup },
  listGroup: { file: 'listGroup-4.lua', numberOfKeys: 4, source: listGroup },
  holdLease: { file: 'holdLease-4.lua', numberOfKeys: 4, source: holdLease },
  releaseLease: { file: 'releaseLease-4.lua', numberOfKeys: 4, source: releaseLease },
  wakeSweeper: { file: 'wakeSweeper-4.lua', numberOfKeys: 4, source: wakeSweeper },
  startFanout: { file: 'startFanout-1.lua', numberOfKeys: 1, source: startFanout },
  endFanout: { file: 'endFanout-1.lua', numberOfKeys: 1, source: endFanout },
  syncPoint: { file: 'syncPoint-1.lua', numberOfKeys: 1, source: syncPoint },
  recordStarts: { file: 'recordStarts-1.lua', numberOfKeys: 1, source: recordStarts },
  putSchedule: { file: 'putSchedule-9.lua', numberOfKeys: 9, source: putSchedule },
  advanceSchedule: { file: 'advanceSchedule-8.lua', numberOfKeys: 8, source: advanceSchedule },
  deleteSchedule: { file: 'deleteSchedule-8.lua', numberOfKeys: 8, source: deleteSchedule },
  dueSchedules: { file: 'dueSchedules-2.lua', numberOfKeys: 2, source: dueSchedules },
  getSchedule: { file: 'getSchedule-1.lua', numberOfKeys: 1, source: getSchedule },
  listSchedules: { file: 'listSchedules-2.lua', numberOfKeys: 2, source: listSchedules },
  takeTokens: { file: 'takeTokens-1.lua', numberOfKeys: 1, source: takeTokens },
  returnTokens: { file: 'returnTokens-1.lua', numberOfKeys: 1, source: returnTokens },
} as const;

export type ScriptName = keyof typeof SCRIPTS;
export type Client = Redis | Cluster;
export type Arg = string | number;

/**
 * One call of a script, built by its typed wrapper in lib/engine/scripts.ts: the KEYS in the
 * script's order, the ARGV, and (as a type only) what the script replies.
 */
export interface ScriptCall<Reply> {
  readonly script: ScriptName;
  readonly keys: readonly string[];
  readonly args: readonly Arg[];
  /** Never set: carries the reply's type. */
  readonly reply?: Reply;
}

const PREFIX = 'dq_';
const registered = new WeakSet<Client>();

/** Every file of lua/includes/, by the name a script includes it by: `--- @include "name"`. */
export const INCLUDES: Readonly<Record<string, string>> = {
  argv,
  attempts,
  budget,
  buckets,
  cancel,
  clock,
  codes,
  groupCancel,
  groups,
  head,
  job,
  occurrences,
  schedules,
};

/**
 * The includes a Lua text names on its `--- @include "name"` lines, and theirs, each once and each
 * after those it includes: the order they go before the text. Throws on an unknown name or a cycle.
 */
export function includeOrder(text: string, includes: Readonly<Record<string, string>> = INCLUDES, from = 'the script'): string[] {
  const order: string[] = [];
  const open: string[] = [];
  const visit = (source: string, by: string): void => {
    for (const [, name] of source.matchAll(/^--- @include "([^"]*)"[ \t]*$/gm)) {
      if (order.includes(name!)) continue;
      if (open.includes(name!)) throw new Error(`lua includes go round: ${[...open, name].join(' -> ')}`);
      if (!Object.hasOwn(includes, name!)) throw new Error(`${by} includes "${name}", which is not in lua/includes/`);
      open.push(name!);
      visit(includes[name!]!, `includes/${name}.lua`);
      open.pop();
      order.push(name!);
    }
  };
  visit(text, from);
  return order;
}

/** The full text Redis runs for a script: the includes it names (see includeOrder), then the script. */
export function scriptText(name: ScriptName): string {
  const { file, source } = SCRIPTS[name];
  return [...includeOrder(source, INCLUDES, file).map((include) => INCLUDES[include]), source].join('\n');
}

/**
 * Registers every script on a client (idempotent). ioredis sends EVALSHA and falls back to EVAL
 * on NOSCRIPT by itself, so nothing is loaded at cold start and a Redis restart (SCRIPT FLUSH)
 * needs no handling.
 */
export function registerScripts(client: Client): void {
  if (registered.has(client)) return;
  for (const name of Object.keys(SCRIPTS) as ScriptName[]) {
    client.defineCommand(PREFIX + name, { numberOfKeys: SCRIPTS[name].numberOfKeys, lua: scriptText(name) });
  }
  registered.add(client);
}

function checkKeys(name: ScriptName, keys: readonly string[]): void {
  if (keys.length !== SCRIPTS[name].numberOfKeys) throw new Error(`${name} takes ${SCRIPTS[name].numberOfKeys} keys, got ${keys.length}`);
}

type Command = (...args: Arg[]) => unknown;

function send<T>(target: object, name: ScriptName, keys: readonly string[], args: readonly Arg[]): T {
  checkKeys(name, keys);
  const fn = (target as Record<string, Command | undefined>)[PREFIX + name];
  if (!fn) throw new Error(`scripts are not registered on this client (call registerScripts)`);
  return fn.call(target, ...keys, ...args) as T;
}

// A cluster's refusals of a call it did not run, while a slot moves: MOVED and ASK (the keys are
// served elsewhere), TRYAGAIN (the keys are split between two primaries), CLUSTERDOWN; NOSCRIPT
// (ioredis took a script for loaded on a primary when its EVAL there was refused, and after a
// redirection inside a pipeline it does not fall back to EVAL); and ioredis' refusal, before
// sending it, of a pipeline whose slots no longer share a node.
const NOT_RUN = /^(MOVED|ASK|TRYAGAIN|CLUSTERDOWN|NOSCRIPT) |^All keys in the pipeline should belong to the same slots allocation group/;
// How long a refused call is sent again: a partition's slot stays split for the whole time its
// keys take to MIGRATE (up to ~1.8 s in test/integration/slot-move.test.ts on a busy 2-core
// machine), and an ack that gives up makes its job run twice. Well inside the API Lambda's 10 s.
const RESEND_MS = 3000;

/** True when `error` is a cluster's refusal of a call that surely did not run, so it may be sent again. */
function notRun(client: Client, error: unknown): error is Error {
  return client instanceof Cluster && error instanceof Error && NOT_RUN.test(error.message);
}

/**
 * Sends `call`, refused unrun with `refusal`, again alone in a pipeline of its own, where ioredis
 * follows a MOVED or ASK and waits out a TRYAGAIN itself (up to maxRedirections), not in an
 * auto-pipeline shared with other slots; again while refused, for up to RESEND_MS. Throws the
 * last refusal (Redis unavailable) or any other error.
 */
async function resend<Reply>(client: Client, call: ScriptCall<Reply>, refusal: Error): Promise<Reply> {
  const end = Date.now() + RESEND_MS;
  for (let attempt = 0; ; attempt++) {
    if (attempt > 0) await sleep(Math.min(20 * 2 ** attempt, 250));
    const pipeline = client.pipeline();
    send(pipeline, call.script, call.keys, call.args);
    const [[error, reply] = [refusal, null]] = (await pipeline.exec().catch((e: unknown) => [[e, null]])) ?? [];
    if (!error) return reply as Reply;
    if (!notRun(client, error) || Date.now() >= end) throw error;
  }
}

/**
 * Runs one typed script call on a client (registering the scripts on it first if needed). On a
 * cluster, a call refused unrun while its slot moves (MOVED or ASK not followed inside an
 * auto-pipeline, TRYAGAIN, an auto-pipeline refused by ioredis) is sent again (see resend).
 */
export async function run<Reply>(client: Client, call: ScriptCall<Reply>): Promise<Reply> {
  registerScripts(client);
  try {
    return await send<Promise<Reply>>(client, call.script, call.keys, call.args);
  } catch (error) {
    if (!notRun(client, error)) throw error;
    return resend(client, call, error);
  }
}

/**
 * Runs typed script calls in one pipeline, replies in call order; throws the first error. On a
 * cluster every call's keys must share a slot (one partition, or the sweeper's keys); calls
 * refused unrun while the slot moves are sent again each alone (see resend), after the others
 * ran, and the replies of those that ran are kept.
 */
export async function runPipelined<Reply>(client: Client, calls: readonly ScriptCall<Reply>[]): Promise<Reply[]> {
  registerScripts(client);
  const pipeline = client.pipeline();
  for (const call of calls) send(pipeline, call.script, call.keys, call.args);
  let replies: [Error | null, unknown][];
  try {
    replies = (await pipeline.exec()) ?? [];
  } catch (error) {
    if (!notRun(client, error)) throw error;
    return Promise.all(calls.map((call) => resend(client, call, error)));
  }
  const failed = replies.find(([error]) => error && !notRun(client, error));
  if (failed) throw failed[0];
  return Promise.all(replies.map(([error, reply], i) => (error ? resend(client, calls[i]!, error) : (reply as Reply))));
}

/**
 * Runs plain reads of keys in one slot in a pipeline of their own (`reads` adds them), replies in
 * order; throws the first error. Reads change nothing, so on a cluster a pipeline refused while its
 * slot moves (MOVED, ASK, TRYAGAIN, a stale slot map) is sent again, for up to RESEND_MS, as script
 * calls are (see resend): a claim's running counts and the bodies it reads apart answer during a
 * reshard instead of failing the claim.
 */
export async function readSlot(client: Client, reads: (pipeline: ChainableCommander) => unknown): Promise<unknown[]> {
  const end = Date.now() + RESEND_MS;
  for (let attempt = 0; ; attempt++) {
    if (attempt > 0) await sleep(Math.min(20 * 2 ** attempt, 250));
    const pipeline = client.pipeline();
    reads(pipeline);
    let replies: [Error | null, unknown][];
    try {
      replies = (await pipeline.exec()) ?? [];
    } catch (error) {
      if (!notRun(client, error) || Date.now() >= end) throw error;
      continue;
    }
    const failed = replies.find(([error]) => error);
    if (!failed) return replies.map(([, reply]) => reply);
    if (!notRun(client, failed[0]) || Date.now() >= end) throw failed[0];
  }
}

/**
 * Runs a typed script call and then HGET `field` of hash `key` in one MULTI/EXEC transaction, so
 * nothing runs between them; replies the script's reply and the field (null when missing). On a
 * cluster the hash must share the call's slot. Inside a transaction ioredis cannot fall back from
 * EVALSHA to EVAL, so after a NOSCRIPT (a restarted Redis) the call runs once alone, which loads
 * the script, and the transaction is sent again (twice at most): only for a script that changes
 * nothing. A transaction refused unrun while its slot moves is sent again for up to RESEND_MS.
 */
export async function runThenHget<Reply>(client: Client, call: ScriptCall<Reply>, key: string, field: string): Promise<[Reply, string | null]> {
  registerScripts(client);
  const attempt = async (): Promise<[Reply, string | null]> => {
    const tx = client.multi();
    send(tx, call.script, call.keys, call.args);
    tx.hget(key, field);
    const replies = (await tx.exec()) ?? [];
    if (replies.length !== 2) throw new Error(`the transaction of ${call.script} was discarded`);
    const [[scriptError, reply], [readError, value]] = replies as [[Error | null, unknown], [Error | null, unknown]];
    if (scriptError) throw scriptError;
    if (readError) throw readError;
    return [reply as Reply, value as string | null];
  };
  const end = Date.now() + RESEND_MS;
  for (let tries = 0, loads = 0; ; tries++) {
    try {
      return await attempt();
    } catch (error) {
      // once per primary the transaction meets: the first, and the new one after its slot moved
      if (error instanceof Error && error.message.includes('NOSCRIPT') && loads++ < 2) {
        await run(client, call);
        continue;
      }
      // the transaction was refused unrun while its slot moved, at EXEC or (EXECABORT) before: again
      const previous = (error as { previousErrors?: unknown[] }).previousErrors;
      const why = previous?.length ? previous : [error];
      if (!why.every((e) => notRun(client, e)) || Date.now() >= end) throw error;
      await sleep(Math.min(20 * 2 ** tries, 250));
    }
  }
}
