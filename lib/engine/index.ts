/**
 * The engine's door: what the HTTP API, the worker Lambdas and the runtime may use. Every state
 * change is one Lua script call (lua/), built by its typed wrapper (./scripts.ts) and sent by
 * ./script-runner.ts; the Engine class (./engine.ts) takes validated input and answers typed
 * results and refusal codes (./codes.ts), never HTTP errors. Tests and benches reach further only
 * through lib/testing.ts.
 */
export { Engine } from './engine';
export type { EngineOptions } from './context';
export type { TopicStatsView } from './lateness';
export { DEPLOYMENT_KEY, KEY_USE_NOTE_MS, secretDigest, type Caller, type KeyInfo, type Scope } from './api-keys';
export type {
  AckOutcome,
  AttemptOutcome,
  AttemptRecord,
  AttemptRef,
  ClaimedJob,
  DeadJob,
  FailOutcome,
  Job,
  JobChange,
  JobState,
  NewJob,
  KeyedSpec,
  Refused,
  SweepResult,
  TopicStats,
  Wake,
  WriteResult,
} from './jobs';
export type { HistoryEntry, JobView, NewSchedule, StoredSpec } from './shapes';
export { isRefused } from './jobs';
export { REFUSAL, type Refusal } from './codes';
export { NotReplicatedError, connectedReplicas } from './durable';
export { layoutFor, partitionOf, routingId } from './keys';
export { chunkBySize } from './partitions';
export type { PacedClaim, Started } from './attempts';
export type { FlowKeyChange, FlowKeyState, FlowLimits, FlowRate } from './flow';
export type { OnReady } from './sweep';
export { decodeDeadCursor, encodeDeadCursor, type DeadCursor } from './dead';
export { decodeGroupCursor, encodeGroupCursor, type GroupCursor } from './groups';
export { decodeJobsCursor, encodeJobsCursor, type JobsCursor, type ListState } from './lists';
export { decodeScheduleCursor, encodeScheduleCursor, type Schedule } from './schedules';
export type { LatenessMinute, LatenessWindow } from './lateness';
export { LEASE, type WakeWaiter } from './coordination';
