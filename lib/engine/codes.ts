/**
 * Every number the Lua scripts and TypeScript agree on, by name. Each table here has a twin of
 * the same name and values in lua/includes/codes.lua (the job states are its PENDING..EXPIRED
 * locals); test/integration/codes.test.ts runs that file in Redis and checks the two agree.
 */

/** Job states as the scripts store them (READY only in replies: a pending job not in the delayed zset). */
export const JOB_STATE = { PENDING: 1, READY: 2, RUNNING: 3, DONE: 4, DEAD: 5, CANCELLED: 6, EXPIRED: 7 } as const;
export type JobStateCode = (typeof JOB_STATE)[keyof typeof JOB_STATE];

/** Refusals: a script changed nothing and says why. lib/api/api-errors.ts maps each to its API error. */
export const REFUSAL = {
  JOB_EXISTS: -1,
  NOT_FOUND: -2,
  JOB_FINISHED: -3,
  STALE_ATTEMPT: -4,
  CANCELLED: -5,
  VERSION_MISMATCH: -6,
} as const;
export type Refusal = (typeof REFUSAL)[keyof typeof REFUSAL];

/**
 * A write that a partition of the former layout turns away while the partition count changes (the
 * partition is closed to new ids: see Layout in lib/engine/keys.ts): never an answer to the API,
 * the engine writes it in the current layout. The script replies it with the current count.
 */
export const RELAYOUT = {
  MOVED: -7,
  /**
   * deleteSchedule 'freeze': the schedule is not moved now (an occurrence of it runs, or waits for a retry, in the
   * former partition)
   */
  BUSY: -8,
  /**
   * deleteSchedule 'freeze': the schedule is frozen in the former partition for its move
   * (lib/engine/relayout-schedules.ts)
   */
  FROZEN: 3,
  /** putSchedule 'adopt': the schedule was made in its current partition from its frozen record */
  ADOPTED: 4,
} as const;

/** What a job script did, when it did something; the script that says each is named beside it. */
export const OUTCOME = {
  /** addJobs: a new job (or a cancelled one made anew by put); putSchedule: a new schedule */
  CREATED: 1,
  /** addJobs: put replaced a pending job; putSchedule: replaced a schedule */
  REPLACED: 2,
  /** addJobs: a dedupe add within its key's window: nothing changed */
  DUPLICATE: 5,
  /** addJobs: a debounce add folded into its key's waiting job (body and runAt replaced) */
  DEBOUNCED: 6,
  /** cancelJob */
  CANCELLED: 1,
  /** cancelJob: it was cancelled before */
  ALREADY_CANCELLED: 0,
  /** rescheduleJob */
  RESCHEDULED: 1,
  /** ackJobs */
  ACKED: 1,
  /** ackJobs: done, and its callback's entry is in the outbox (lua/includes/callbacks.lua) */
  ACKED_NOTIFY: 2,
  /** failJob: the next attempt is scheduled */
  RETRY_SCHEDULED: 1,
  /** failJob: attempts used up, the job is dead */
  DEAD_LETTERED: 0,
  /** giveBack (moveDue, releaseJobs): a claim that never started went back to ready, uncounted */
  GIVEN_BACK: 2,
  /** startAttempts: the attempt is live and now marked started: run it */
  STARTED: 1,
  /** startAttempts: the topic or the job's flow key is paused: given back without counting; do not run it */
  HELD_BACK: 3,
  /** startAttempts: due after its job's expiry (expiresAt): the job is now expired, not started; do not run it */
  EXPIRED: 4,
  /** advanceSchedule: the schedule moved on to its next occurrence */
  ADVANCED: 1,
  /** deleteSchedule */
  DELETED: 1,
} as const;

/** holdLease and releaseLease (holdLease otherwise returns the wake counter, ≥ 0). */
export const LEASE = {
  /** another sweeper holds the lease: nothing changed */
  NOT_OWNER: -1,
  /** releaseLease: a wake-up arrived since the caller's sweep began; the lease is still held */
  KEPT: 0,
  /** releaseLease: released */
  RELEASED: 1,
} as const;

/** wakeSweeper: what the caller must do after a job became the earliest due of its topic. */
export const WAKE = {
  /** a sweeper looks in time, or the tick will */
  NOTHING: 0,
  /** the running sweeper was woken */
  WOKEN: 1,
  /** no sweeper runs and the job is due within the horizon: invoke one */
  START_SWEEPER: 2,
} as const;

/** startFanout and endFanout. */
export const FANOUT_MARK = {
  /** startFanout: marked; invoke the fan-out */
  MARKED: 1,
  /** startFanout: one is running already and will see the new work */
  ALREADY_RUNNING: 0,
  /** endFanout: the caller's mark was cleared */
  CLEARED: 1,
  /** endFanout: the mark was another's, or expired: nothing changed */
  NOT_OURS: 0,
} as const;

/** createKey and revokeKey (lua/createKey-2.lua, lua/revokeKey-4.lua). */
export const KEY_CHANGE = {
  /** createKey: the key exists now */
  CREATED: 1,
  /** revokeKey: the key works no more */
  REVOKED: 1,
  /** createKey: a key of that name (or, never in practice, that digest) exists */
  NAME_TAKEN: -1,
  /** createKey: the deployment holds MAX_KEYS keys already */
  TOO_MANY: -2,
  /** revokeKey: no such key, or revoked already */
  NOT_FOUND: -3,
  /**
   * revokeKey: the key is the last with the admin scope (the deployment's while no named admin key exists; the only
   * named admin key while the deployment's is revoked or there is none): left as it is, so some key can manage keys
   */
  LAST_ADMIN: -4,
} as const;

/** A 0|1 flag in a reply (headChanged, more). */
export type Flag = 0 | 1;
