/**
 * The test-support door: what tests and benchmarks reach inside the engine and the HTTP API for
 * (key names, script wrappers and the runner, codes, validation, an engine's context), and what
 * nothing in lib/ or functions/ imports (test/unit/architecture.test.ts checks both). Production
 * code goes through the engine's door (lib/engine/index.ts) and the API's routes.
 */
import { contextOf, type EngineContext } from './engine/context';
import { wakeFor } from './engine/coordination';

export * from './engine/keys';
export * from './engine/script-runner';
export * from './engine/codes';
export * from './engine/partitions';
export { moveDue } from './engine/sweep';
export * as scripts from './engine/scripts';
export * as schedules from './engine/schedules';
export { moveSchedules } from './engine/schedules';
export { cancelGroup, CANCEL_GROUP_STEP } from './engine/groups';
export { createKey } from './engine/api-keys';
export { binUpperMs, parseMinutes, percentileMs } from './engine/lateness';
export { encodeDeadCursor } from './engine/dead';
export { decodeHistory } from './engine/jobs';
export { callbackId, parseEntry } from './engine/callbacks';
export { returnTokens, takeTokens } from './engine/scripts';
export * from './api/api-errors';
export * from './api/validation';
export * from './api/schedule-validation';
export * from './api/auth';
export * from './api/iam';

/** The context an engine's operations run with: its client, layout, clock. */
export function engineContext(engine: object): EngineContext {
  return contextOf(engine);
}

/** What a change that made a job due at `dueAt` does to wake the sweeper (the engine's `wake` option). */
export function wakeSweeperFor(engine: object, dueAt: number | 'now'): Promise<void> {
  return wakeFor(contextOf(engine), dueAt);
}

export type { EngineContext };
