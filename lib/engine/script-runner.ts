import { createHash } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { Cluster, type ChainableCommander, type Redis } from 'ioredis';
import ack from '../../lua/includes/ack.lua';
import argv from '../../lua/includes/argv.lua';
import attempts from '../../lua/includes/attempts.lua';
import budget from '../../lua/includes/budget.lua';
import buckets from '../../lua/includes/buckets.lua';
import call from '../../lua/includes/call.lua';
import callbacks from '../../lua/includes/callbacks.lua';
import cancel from '../../lua/includes/cancel.lua';
import claim from '../../lua/includes/claim.lua';
import clock from '../../lua/includes/clock.lua';
import codes from '../../lua/includes/codes.lua';
import flow from '../../lua/includes/flow.lua';
import groupCancel from '../../lua/includes/groupCancel.lua';
import groups from '../../lua/includes/groups.lua';
import head from '../../lua/includes/head.lua';
import keyed from '../../lua/includes/keyed.lua';
import job from '../../lua/includes/job.lua';
import lateness from '../../lua/includes/lateness.lua';
import occurrences from '../../lua/includes/occurrences.lua';
import priority from '../../lua/includes/priority.lua';
import schedules from '../../lua/includes/schedules.lua';
import ackJobs from '../../lua/ackJobs-4.lua';
import addJobs from '../../lua/addJobs-5.lua';
import cancelJob from '../../lua/cancelJob-5.lua';
import cancelGroup from '../../lua/cancelGroup-6.lua';
import claimJobs from '../../lua/claimJobs-7.lua';
import endFanout from '../../lua/endFanout-1.lua';
import failJob from '../../lua/failJob-4.lua';
import getJob from '../../lua/getJob-2.lua';
import holdLease from '../../lua/holdLease-4.lua';
import leaveGroup from '../../lua/leaveGroup-2.lua';
import listGroup from '../../lua/listGroup-4.lua';
import listJobs from '../../lua/listJobs-4.lua';
import listReady from '../../lua/listReady-4.lua';
import moveDue from '../../lua/moveDue-8.lua';
import redriveJobs from '../../lua/redriveJobs-3.lua';
import releaseLease from '../../lua/releaseLease-4.lua';
import releaseJobs from '../../lua/releaseJobs-5.lua';
import rescheduleJob from '../../lua/rescheduleJob-3.lua';
import startAttempts from '../../lua/startAttempts-5.lua';
import claimFlow from '../../lua/claimFlow-6.lua';
import pauseTopic from '../../lua/pauseTopic-1.lua';
import setFlowKey from '../../lua/setFlowKey-1.lua';
import getFlowKey from '../../lua/getFlowKey-1.lua';
import startFanout from '../../lua/startFanout-1.lua';
import syncPoint from '../../lua/syncPoint-1.lua';
import wakeSweeper from '../../lua/wakeSweeper-4.lua';
import putSchedule from '../../lua/putSchedule-9.lua';
import advanceSchedule from '../../lua/advanceSchedule-8.lua';
import deleteSchedule from '../../lua/deleteSchedule-8.lua';
import dueSchedules from '../../lua/dueSchedules-2.lua';
import getSchedule from '../../lua/getSchedule-1.lua';
import listSchedules from '../../lua/listSchedules-2.lua';
import takeTokens from '../../lua/takeTokens-1.lua';
import returnTokens from '../../lua/returnTokens-1.lua';
import createKey from '../../lua/createKey-2.lua';
import revokeKey from '../../lua/revokeKey-4.lua';
import authKey from '../../lua/authKey-4.lua';
import takeCallbacks from '../../lua/takeCallbacks-1.lua';
import endCallbacks from '../../lua/endCallbacks-1.lua';
import { slotOf } from './keys';
import { groupBy, partitionsInOrder } from './partitions';

/** Every script: its file in lua/, how many KEYS it takes, and its source. */
export const SCRIPTS = {
  addJobs: { file: 'addJobs-5.lua', numberOfKeys: 5, source: addJobs },
  getJob: { file: 'getJob-2.lua', numberOfKeys: 2, source: getJob },
  cancelJob: { file: 'cancelJob-5.lua', numberOfKeys: 5, source: cancelJob },
  rescheduleJob: { file: 'rescheduleJob-3.lua', numberOfKeys: 3, source: rescheduleJob },
  claimJobs: { file: 'claimJobs-7.lua', numberOfKeys: 7, source: claimJobs },
  ackJobs: { file: 'ackJobs-4.lua', numberOfKeys: 4, source: ackJobs },
  failJob: { file: 'failJob-4.lua', numberOfKeys: 4, source: failJob },
  releaseJobs: { file: 'releaseJobs-5.lua', numberOfKeys: 5, source: releaseJobs },
  startAttempts: { file: 'startAttempts-5.lua', numberOfKeys: 5, source: startAttempts },
  claimFlow: { file: 'claimFlow-6.lua', numberOfKeys: 6, source: claimFlow },
  pauseTopic: { file: 'pauseTopic-1.lua', numberOfKeys: 1, source: pauseTopic },
  setFlowKey: { file: 'setFlowKey-1.lua', numberOfKeys: 1, source: setFlowKey },
  getFlowKey: { file: 'getFlowKey-1.lua', numberOfKeys: 1, source: getFlowKey },
  moveDue: { file: 'moveDue-8.lua', numberOfKeys: 8, source: moveDue },
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
  putSchedule: { file: 'putSchedule-9.lua', numberOfKeys: 9, source: putSchedule },
  advanceSchedule: { file: 'advanceSchedule-8.lua', numberOfKeys: 8, source: advanceSchedule },
  deleteSchedule: { file: 'deleteSchedule-8.lua', numberOfKeys: 8, source: deleteSchedule },
  dueSchedules: { file: 'dueSchedules-2.lua', numberOfKeys: 2, source: dueSchedules },
  getSchedule: { file: 'getSchedule-1.lua', numberOfKeys: 1, source: getSchedule },
  listSchedules: { file: 'listSchedules-2.lua', numberOfKeys: 2, source: listSchedules },
  takeTokens: { file: 'takeTokens-1.lua', numberOfKeys: 1, source: takeTokens },
  returnTokens: { file: 'returnTokens-1.lua', numberOfKeys: 1, source: returnTokens },
  createKey: { file: 'createKey-2.lua', numberOfKeys: 2, source: createKey },
  revokeKey: { file: 'revokeKey-4.lua', numberOfKeys: 4, source: revokeKey },
  authKey: { file: 'authKey-4.lua', numberOfKeys: 4, source: authKey },
  takeCallbacks: { file: 'takeCallbacks-1.lua', numberOfKeys: 1, source: takeCallbacks },
  endCallbacks: { file: 'endCallbacks-1.lua', numberOfKeys: 1, source: endCallbacks },
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

/**
 * Every file of lua/includes/, by the name a script includes it by: `--- @include "name"`. Each
 * include declares one top-level local, a table named after it with a capital (includes/job.lua:
 * `Job`), and keeps its helpers as locals in a `do ... end` block that sets the ones others use on
 * the table (`Job.decode = decode`); others call them through it (`Job.decode(record)`), or take
 * the ones they use per job into locals first. Lua allows a function 200 locals at its top level,
 * which the library's (every include) and each script's full text for EVAL share.
 */
export const INCLUDES: Readonly<Record<string, string>> = {
  ack,
  argv,
  attempts,
  budget,
  buckets,
  call,
  callbacks,
  cancel,
  claim,
  clock,
  codes,
  flow,
  groupCancel,
  groups,
  head,
  job,
  keyed,
  lateness,
  occurrences,
  priority,
  schedules,
};

/**
 * The includes a Lua text names on its `--- @include "name"` lines, and theirs, each once and each
 * after those it includes: the order they go before the text. Throws on an unknown name or a cycle.
 */
export function includeOrder(
  text: string,
  includes: Readonly<Record<string, string>> = INCLUDES,
  from = 'the script',
): string[] {
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

/** Scripts that change nothing: flagged `no-writes` in the library, so they answer while Redis is out of memory. */
const READ_ONLY: ReadonlySet<ScriptName> = new Set([
  'getJob',
  'getFlowKey',
  'listJobs',
  'listReady',
  'listGroup',
  'dueSchedules',
  'getSchedule',
  'listSchedules',
]);

/** The scripts as one Redis Functions library: its name, its text, and each script's function name. */
export interface Library {
  readonly name: string;
  readonly text: string;
  readonly functions: Readonly<Record<ScriptName, string>>;
}

/** The tables of the includes (includes/job.lua: Job). */
const INCLUDE_TABLES = new Set(Object.keys(INCLUDES).map((name) => name.charAt(0).toUpperCase() + name.slice(1)));

/**
 * A script's source split after its aliases of the includes' helpers: its contract block and `--- @include` lines,
 * then the lines (comments among them) up to the last that only takes fields of include tables into locals (`local
 * decode, save = Job.decode, Job.save`), indented; then the rest. ['', source] when it has none. The tables never
 * change once the includes ran, so in the library those lines run once, at load, and the script's function reads the
 * locals as upvalues, where a call would look each up anew.
 */
function splitAliases(source: string): [string, string] {
  const lines = source.split('\n');
  let end = 0;
  for (let i = lines[0]?.startsWith('--[[') ? lines.indexOf(']]') + 1 : 0; i < lines.length; i++) {
    const line = lines[i]!;
    if (line.startsWith('--')) continue;
    const alias = /^local [\w, ]+ = ((?:[A-Z]\w*\.\w+, )*[A-Z]\w*\.\w+)$/.exec(line);
    if (!alias || !alias[1]!.split(', ').every((field) => INCLUDE_TABLES.has(field.split('.')[0]!))) break;
    end = i + 1;
  }
  return [
    lines
      .slice(0, end)
      .map((line) => (line ? `  ${line}\n` : '\n'))
      .join(''),
    lines.slice(end).join('\n'),
  ];
}

let library: Library | undefined;

/**
 * The library Redis runs the scripts from (FUNCTION LOAD, then FCALL): every include once, then
 * each script as a function that clears the includes' per-call state (lua/includes/call.lua) and
 * runs the script's text with its KEYS and ARGV, the script's aliases of the includes' helpers
 * taken once, before it (splitAliases). A script sent with EVAL runs its includes anew on
 * every call (an ack: 47–48 µs a call with EVALSHA, 41 µs as a function, DESIGN.md); a function
 * runs them once, at load. The names carry a hash of the text, so two versions of the stack (during a deploy) each
 * call their own.
 */
export function scriptLibrary(): Library {
  if (library) return library;
  const names = Object.keys(SCRIPTS) as ScriptName[];
  const includes = includeOrder(
    Object.keys(INCLUDES)
      .map((name) => `--- @include "${name}"`)
      .join('\n'),
  );
  const fn = (name: ScriptName) => `dq_@VERSION@_${name}`;
  const body = [
    ...includes.map((include) => INCLUDES[include]),
    ...names.map((name) => {
      const flags = READ_ONLY.has(name) ? "{ 'no-writes' }" : '{}';
      const [head, rest] = splitAliases(SCRIPTS[name].source);
      return `do\n${head}redis.register_function{ function_name = '${fn(name)}', flags = ${flags}, callback = function(KEYS, ARGV)\nCall.beginCall()\n${rest}\nend }\nend`;
    }),
  ].join('\n');
  const version = createHash('sha1').update(body).digest('hex').slice(0, 12);
  library = {
    name: `dq_${version}`,
    text: `#!lua name=dq_${version}\n${body.replaceAll('@VERSION@', version)}`,
    functions: Object.fromEntries(names.map((name) => [name, fn(name).replace('@VERSION@', version)])) as Record<
      ScriptName,
      string
    >,
  };
  return library;
}

/**
 * How a client runs scripts: `functions` (FCALL of the library, loaded on a node when it answers
 * "Function not found"), or `scripts` (EVALSHA, falling back to EVAL by itself) once the server
 * refused FUNCTION or FCALL: a Redis before 7.0, or an ACL that does not grant them.
 */
type Mode = 'functions' | 'scripts';
const modes = new WeakMap<Client, Mode>();
const loads = new WeakMap<Client, Promise<void>>();

function modeOf(client: Client): Mode {
  return modes.get(client) ?? 'functions';
}

/**
 * Switches `client` to EVALSHA for good (before any pipeline is made for it: a pipeline copies the client's script
 * commands when made).
 */
function useScripts(client: Client): void {
  registerScripts(client);
  modes.set(client, 'scripts');
}

/**
 * Registers every script on a client for EVALSHA (idempotent): the `scripts` mode. ioredis sends
 * EVALSHA and falls back to EVAL on NOSCRIPT by itself.
 */
function registerScripts(client: Client): void {
  if (registered.has(client)) return;
  for (const name of Object.keys(SCRIPTS) as ScriptName[]) {
    client.defineCommand(PREFIX + name, { numberOfKeys: SCRIPTS[name].numberOfKeys, lua: scriptText(name) });
  }
  registered.add(client);
}

// The server lacks the library (never loaded there, a restart without persistence, FUNCTION FLUSH).
const NO_FUNCTION = /^ERR Function not found/;
// The server does not run functions for this client: no such command (Redis before 7.0, renamed), or the ACL.
const NO_FUNCTIONS = /^ERR unknown command [`']f(call|unction)[`']|^NOPERM .*\bf(call|unction)\b/i;

/** True when `error` says the call did not run because the library is missing or functions are refused. */
function needsSetup(client: Client, error: unknown): error is Error {
  return (
    modeOf(client) === 'functions' &&
    error instanceof Error &&
    (NO_FUNCTION.test(error.message) || NO_FUNCTIONS.test(error.message))
  );
}

/**
 * Readies `client` to run a call refused with `refusal` (see needsSetup): loads the library on
 * every primary (once at a time per client; "already exists" is success), or switches the client
 * to EVALSHA when the server refuses functions.
 */
async function setUp(client: Client, refusal: Error): Promise<void> {
  if (NO_FUNCTIONS.test(refusal.message)) return useScripts(client);
  let load = loads.get(client);
  if (!load) {
    const { text } = scriptLibrary();
    const nodes = client instanceof Cluster ? client.nodes('master') : [client];
    load = Promise.all(
      nodes.map(async (node) => {
        try {
          await node.call('FUNCTION', 'LOAD', text);
        } catch (error) {
          if (error instanceof Error && / already exists/.test(error.message)) return;
          if (error instanceof Error && NO_FUNCTIONS.test(error.message)) return useScripts(client);
          throw error;
        }
      }),
    ).then(() => undefined);
    loads.set(client, load);
    void load.finally(() => loads.delete(client)).catch(() => undefined);
  }
  await load;
}

function checkKeys(name: ScriptName, keys: readonly string[]): void {
  if (keys.length !== SCRIPTS[name].numberOfKeys)
    throw new Error(`${name} takes ${SCRIPTS[name].numberOfKeys} keys, got ${keys.length}`);
}

type Command = (...args: Arg[]) => unknown;

/**
 * Queues or sends one call on `target` (the client, a pipeline or a transaction of it), the way its client runs
 * scripts.
 */
function send<T>(client: Client, target: object, name: ScriptName, keys: readonly string[], args: readonly Arg[]): T {
  checkKeys(name, keys);
  if (modeOf(client) === 'functions')
    return (target as { fcall: Command }).fcall(scriptLibrary().functions[name], keys.length, ...keys, ...args) as T;
  return (target as Record<string, Command>)[PREFIX + name]!.call(target, ...keys, ...args) as T;
}

// A cluster's refusals of a call it did not run, while a slot moves: MOVED and ASK (the keys are
// served elsewhere), TRYAGAIN (the keys are split between two primaries), CLUSTERDOWN; NOSCRIPT
// (ioredis took a script for loaded on a primary when its EVAL there was refused, and after a
// redirection inside a pipeline it does not fall back to EVAL); and ioredis' refusal, before
// sending it, of a pipeline whose slots no longer share a node.
const NOT_RUN =
  /^(MOVED|ASK|TRYAGAIN|CLUSTERDOWN|NOSCRIPT) |^All keys in the pipeline should belong to the same slots allocation group/;
// How long a refused call is sent again: a partition's slot stays split for the whole time its
// keys take to MIGRATE (up to ~1.8 s in test/integration/slot-move.test.ts on a busy 2-core
// machine), and an ack that gives up makes its job run twice. Well inside the API Lambda's 10 s.
const RESEND_MS = 3000;
// How many times a call sets its client up (loads the library) before it gives up: a slot that
// moved to a primary without the library needs a second load.
const SETUPS = 3;

/** True when `error` is a cluster's refusal of a call that surely did not run, so it may be sent again. */
function notRun(client: Client, error: unknown): error is Error {
  return client instanceof Cluster && error instanceof Error && NOT_RUN.test(error.message);
}

/**
 * Runs `attempt` until it is not refused unrun, and throws what else it throws. `refusal`: what
 * refused the caller's own try (undefined: none yet). Again while a cluster refuses it unrun as a
 * slot moves (see notRun), backing off, for up to RESEND_MS; again after setting the client up
 * when the library is missing (see needsSetup), SETUPS times at most. Throws the last refusal
 * (Redis unavailable) or any other error.
 */
async function untilRun<T>(client: Client, refusal: unknown, attempt: () => Promise<T>): Promise<T> {
  const end = Date.now() + RESEND_MS;
  let error = refusal;
  for (let tries = 0, setups = 0; ; tries++) {
    if (error !== undefined) {
      if (needsSetup(client, error)) {
        if (setups++ >= SETUPS) throw error;
        await setUp(client, error);
      } else if (!notRun(client, error) || Date.now() >= end) throw error;
      else if (tries > 0) await sleep(Math.min(20 * 2 ** tries, 250));
    }
    try {
      return await attempt();
    } catch (failure) {
      error = failure;
    }
  }
}

/** Sends a pipeline built by `build` and replies its replies in order; throws its first error. */
async function execPipeline(client: Client, build: (pipeline: ChainableCommander) => unknown): Promise<unknown[]> {
  const pipeline = client.pipeline();
  build(pipeline);
  const replies = (await pipeline.exec()) ?? [];
  const failed = replies.find(([error]) => error);
  if (failed) throw failed[0];
  return replies.map(([, reply]) => reply);
}

/**
 * Sends `call`, refused unrun with `refusal`, again alone in a pipeline of its own, where ioredis
 * follows a MOVED or ASK and waits out a TRYAGAIN itself (up to maxRedirections), not in an
 * auto-pipeline shared with other slots (see untilRun).
 */
async function resend<Reply>(client: Client, call: ScriptCall<Reply>, refusal: Error): Promise<Reply> {
  const [reply] = await untilRun(client, refusal, () =>
    execPipeline(client, (pipeline) => send(client, pipeline, call.script, call.keys, call.args)),
  );
  return reply as Reply;
}

/**
 * Runs one typed script call on a client. The first call on a server without the library loads it
 * and runs again (see setUp). On a cluster, a call refused unrun while its slot moves (MOVED or
 * ASK not followed inside an auto-pipeline, TRYAGAIN, an auto-pipeline refused by ioredis) is sent
 * again (see resend).
 */
export async function run<Reply>(client: Client, call: ScriptCall<Reply>): Promise<Reply> {
  try {
    return await send<Promise<Reply>>(client, client, call.script, call.keys, call.args);
  } catch (error) {
    if (!needsSetup(client, error) && !notRun(client, error)) throw error;
    if (notRun(client, error)) resent.set(client, resentCalls(client) + 1);
    return resend(client, call, error);
  }
}

/** Script calls a cluster (or ioredis) refused unrun, by client: sent again (run). */
const resent = new WeakMap<Client, number>();

/**
 * How many script calls `client` had refused unrun and sent again (a slot moving; never on a cluster whose slots stay
 * put).
 */
export function resentCalls(client: Client): number {
  return resent.get(client) ?? 0;
}

/**
 * Runs typed script calls in one pipeline, replies in call order; throws the first error. On a cluster the calls' keys
 * must be served by one node (one partition, the sweeper's keys, or the partitions of one node: runByNode); calls
 * refused unrun (the library missing, the slot moving, a pipeline whose slots no longer share a node) are sent again
 * each alone (see resend), after the others ran, and the replies of those that ran are kept.
 */
export async function runPipelined<Reply>(client: Client, calls: readonly ScriptCall<Reply>[]): Promise<Reply[]> {
  const pipeline = client.pipeline();
  for (const call of calls) send(client, pipeline, call.script, call.keys, call.args);
  let replies: [Error | null, unknown][];
  try {
    replies = (await pipeline.exec()) ?? [];
  } catch (error) {
    if (!notRun(client, error)) throw error;
    return Promise.all(calls.map((call) => resend(client, call, error)));
  }
  const again = (error: Error | null) => error && (needsSetup(client, error) || notRun(client, error));
  const failed = replies.find(([error]) => error && !again(error));
  if (failed) throw failed[0];
  return Promise.all(replies.map(([error, reply], i) => (error ? resend(client, calls[i]!, error) : (reply as Reply))));
}

/**
 * Runs the script calls of one operation over several partitions, `groups` one partition's calls each, in one pipeline
 * per node that serves them (runPipelined: one request on a single node, one per primary on a cluster, not one per
 * partition); replies by group, in call order. A slot the client knows no node for (not connected yet) goes alone.
 */
export async function runByNode<Reply>(
  client: Client,
  groups: readonly (readonly ScriptCall<Reply>[])[],
): Promise<Reply[][]> {
  const replies: Reply[][] = groups.map(() => []);
  const byNode = groupBy(
    partitionsInOrder(groups.length).filter((g) => groups[g]!.length > 0),
    (g) => nodeOf(client, groups[g]![0]!.keys[0]!, g),
  );
  await Promise.all(
    [...byNode.values()].map(async (node) => {
      const got = await runPipelined(
        client,
        node.flatMap((g) => groups[g]!),
      );
      let at = 0;
      for (const g of node) for (let c = 0; c < groups[g]!.length; c++) replies[g]!.push(got[at++]!);
    }),
  );
  return replies;
}

/** The node that serves `key` as the client knows it ('' on a single node), or a name of its own for `i`: unknown. */
const nodeOf = (client: Client, key: string, i: number) =>
  client instanceof Cluster ? (client.slots[slotOf(key)]?.join(';') ?? `slot ${i}`) : '';

/**
 * Runs plain reads of keys in one slot in a pipeline of their own (`reads` adds them), replies in
 * order; throws the first error. Reads change nothing, so on a cluster a pipeline refused while its
 * slot moves (MOVED, ASK, TRYAGAIN, a stale slot map) is sent again, for up to RESEND_MS, as script
 * calls are (see resend): a claim's running counts and the bodies it reads apart answer during a
 * reshard instead of failing the claim.
 */
export async function readSlot(client: Client, reads: (pipeline: ChainableCommander) => unknown): Promise<unknown[]> {
  return untilRun(client, undefined, () => execPipeline(client, reads));
}

/**
 * Runs the same plain reads in each of several slots, one pipeline per node that serves them (all
 * the slots a primary holds in one request; on a single node, one request in all), and replies
 * each slot's replies in order: `keys[i]` is a key of slot i, `reads(pipeline, i)` adds slot i's
 * reads. While a slot moves, a node's pipeline fails without failing the caller: ioredis refuses
 * it when its slots no longer share a node, and a read of the moving slot is refused (ioredis sends
 * a pipeline of reads whose errors are all the same redirection again, whole, to the node named,
 * where the other slots' reads are refused, or it refuses the pipeline, its slot map changed). The
 * slots whose reads did not all answer are read again, each alone, by readSlot, which waits the
 * move out. A slot the client knows no node for (not connected yet) goes alone.
 */
export async function readSlots(
  client: Client,
  keys: readonly string[],
  reads: (pipeline: ChainableCommander, i: number) => unknown,
): Promise<unknown[][]> {
  const replies: unknown[][] = [];
  const groups = groupBy(partitionsInOrder(keys.length), (i) => nodeOf(client, keys[i]!, i)).values();
  await Promise.all(
    [...groups].map(async (group) => {
      const pipeline = client.pipeline();
      const spans = group.map((i) => {
        const from = pipeline.length;
        reads(pipeline, i);
        return [from, pipeline.length] as const;
      });
      const answers = await pipeline.exec().catch(() => null);
      await Promise.all(
        group.map(async (i, n) => {
          const got = answers?.slice(spans[n]![0], spans[n]![1]);
          replies[i] =
            got && got.every(([error]) => !error)
              ? got.map(([, reply]) => reply)
              : await readSlot(client, (p) => reads(p, i));
        }),
      );
    }),
  );
  return replies;
}

/**
 * Runs a typed script call and then HGET `field` of hash `key` in one MULTI/EXEC transaction, so
 * nothing runs between them; replies the script's reply and the field (null when missing). On a
 * cluster the hash must share the call's slot. A transaction whose call found no library loads it
 * (see setUp) and is sent again. With EVALSHA (the `scripts` mode) ioredis cannot fall back to EVAL
 * inside a transaction, so after a NOSCRIPT (a restarted Redis) the call runs once alone, which
 * loads the script, and the transaction is sent again (twice at most): only for a script that
 * changes nothing. A transaction refused unrun while its slot moves is sent again for up to RESEND_MS.
 */
export async function runThenHget<Reply>(
  client: Client,
  call: ScriptCall<Reply>,
  key: string,
  field: string,
): Promise<[Reply, string | null]> {
  const attempt = async (): Promise<[Reply, string | null]> => {
    const tx = client.multi();
    send(client, tx, call.script, call.keys, call.args);
    tx.hget(key, field);
    const replies = (await tx.exec()) ?? [];
    if (replies.length !== 2) throw new Error(`the transaction of ${call.script} was discarded`);
    const [[scriptError, reply], [readError, value]] = replies as [[Error | null, unknown], [Error | null, unknown]];
    if (scriptError) throw scriptError;
    if (readError) throw readError;
    return [reply as Reply, value as string | null];
  };
  const end = Date.now() + RESEND_MS;
  for (let tries = 0, loads = 0, setups = 0; ; tries++) {
    try {
      return await attempt();
    } catch (error) {
      if (needsSetup(client, error) && setups++ < SETUPS) {
        await setUp(client, error);
        continue;
      }
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
