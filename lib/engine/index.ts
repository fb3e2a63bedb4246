/**
 * The engine: every state change of a job is one Lua script call (lua/), built by its typed
 * wrapper (./scripts.ts). It takes validated input (lib/edge/validation.ts) and reports refusals as
 * codes (./codes.ts); lib/edge/queue.ts turns them into API errors.
 */
export { claimJobs, claimPaced, type PacedClaim, ackJob, failJob, releaseJobs, startAttempts } from './attempts';
export type { EngineContext } from './context';
export { listDeadJobs, redriveJobs } from './dead';
export * from './jobs';
export { partitionsInOrder, Rotation } from './partitions';
export { getJob, topicStats } from './read';
export { moveDue, type OnReady, serverTime, sweep } from './sweep';
export { cancelJob, rescheduleJob, writeJobs } from './write';
export { cancelGroup, decodeGroupCursor, encodeGroupCursor, leaveGroups, listGroup, type GroupCursor } from './groups';
export { decodeJobsCursor, encodeJobsCursor, listJobs, type JobsCursor, type ListState } from './lists';
export { REFUSAL } from './codes';
export { latenessStats, oldestReadyAgeMs, recordStarts, type LatenessMinute, type LatenessWindow } from './lateness';
export {
  advanceDue,
  commitAdvance,
  decodeScheduleCursor,
  deleteSchedule,
  dueCall,
  encodeScheduleCursor,
  getSchedule,
  listSchedules,
  planAdvance,
  planPut,
  putSchedule,
  readSchedule,
  type AdvancePlan,
  type Schedule,
} from './schedules';
