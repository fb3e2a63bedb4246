import type { ChainableCommander, Cluster, Redis } from 'ioredis';
import common from '../lua/includes/job.lua';
import ackJob from '../lua/ackJob-3.lua';
import addJobs from '../lua/addJobs-3.lua';
import cancelJob from '../lua/cancelJob-4.lua';
import claimJobs from '../lua/claimJobs-4.lua';
import endFanout from '../lua/endFanout-1.lua';
import failJob from '../lua/failJob-4.lua';
import getJob from '../lua/getJob-2.lua';
import holdLease from '../lua/holdLease-4.lua';
import listDead from '../lua/listDead-2.lua';
import moveDue from '../lua/moveDue-6.lua';
import redriveJobs from '../lua/redriveJobs-3.lua';
import releaseLease from '../lua/releaseLease-4.lua';
import releaseJobs from '../lua/releaseJobs-3.lua';
import rescheduleJob from '../lua/rescheduleJob-2.lua';
import startFanout from '../lua/startFanout-1.lua';
import wakeSweeper from '../lua/wakeSweeper-4.lua';

/** Every script: its file in lua/, how many KEYS it takes, and its source. */
export const SCRIPTS = {
  addJobs: { file: 'addJobs-3.lua', numberOfKeys: 3, source: addJobs },
  getJob: { file: 'getJob-2.lua', numberOfKeys: 2, source: getJob },
  cancelJob: { file: 'cancelJob-4.lua', numberOfKeys: 4, source: cancelJob },
  rescheduleJob: { file: 'rescheduleJob-2.lua', numberOfKeys: 2, source: rescheduleJob },
  claimJobs: { file: 'claimJobs-4.lua', numberOfKeys: 4, source: claimJobs },
  ackJob: { file: 'ackJob-3.lua', numberOfKeys: 3, source: ackJob },
  failJob: { file: 'failJob-4.lua', numberOfKeys: 4, source: failJob },
  releaseJobs: { file: 'releaseJobs-3.lua', numberOfKeys: 3, source: releaseJobs },
  moveDue: { file: 'moveDue-6.lua', numberOfKeys: 6, source: moveDue },
  redriveJobs: { file: 'redriveJobs-3.lua', numberOfKeys: 3, source: redriveJobs },
  listDead: { file: 'listDead-2.lua', numberOfKeys: 2, source: listDead },
  holdLease: { file: 'holdLease-4.lua', numberOfKeys: 4, source: holdLease },
  releaseLease: { file: 'releaseLease-4.lua', numberOfKeys: 4, source: releaseLease },
  wakeSweeper: { file: 'wakeSweeper-4.lua', numberOfKeys: 4, source: wakeSweeper },
  startFanout: { file: 'startFanout-1.lua', numberOfKeys: 1, source: startFanout },
  endFanout: { file: 'endFanout-1.lua', numberOfKeys: 1, source: endFanout },
} as const;

export type ScriptName = keyof typeof SCRIPTS;
type Client = Redis | Cluster;
type Arg = string | number;

const PREFIX = 'dq_';
const registered = new WeakSet<Client>();

/** The full text Redis runs for a script: the shared helpers, then the script. */
export function scriptText(name: ScriptName): string {
  return `${common}\n${SCRIPTS[name].source}`;
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

/**
 * ARGV as callers written before issue 11 pass it: wakeSweeper then took its fixed clock last
 * (due, horizon, clock); it now takes it first, like every other script. lib/sweeper.ts still
 * passes the old order: drop this once it passes the clock first.
 */
const OLD_ARGV: Partial<Record<ScriptName, (args: readonly Arg[]) => Arg[]>> = {
  wakeSweeper: ([due = '', horizon = '', clock = '']) => [clock, due, horizon],
};

/** Runs a script on a client (registering the scripts on it first if needed). */
export function runScript<T = unknown>(client: Client, name: ScriptName, keys: string[], args: Arg[]): Promise<T> {
  if (keys.length !== SCRIPTS[name].numberOfKeys) throw new Error(`${name} takes ${SCRIPTS[name].numberOfKeys} keys, got ${keys.length}`);
  registerScripts(client);
  const fn = (client as unknown as Record<string, (...a: Arg[]) => Promise<T>>)[PREFIX + name]!;
  return fn.call(client, ...keys, ...(OLD_ARGV[name]?.(args) ?? args));
}

/** Queues a script on a pipeline of a registered client. */
export function queueScript(pipeline: ChainableCommander, name: ScriptName, keys: string[], args: Arg[]): void {
  const fn = (pipeline as unknown as Record<string, (...a: Arg[]) => unknown>)[PREFIX + name];
  if (!fn) throw new Error(`scripts are not registered on this client (call registerScripts)`);
  fn.call(pipeline, ...keys, ...args);
}
