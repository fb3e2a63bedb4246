--[[
  The numbers scripts share with TypeScript: the job states, and every code a script replies with,
  by name. Each table is mirrored, name for name and value for value, by the table of the same
  name in lib/engine/codes.ts (test/integration/codes.test.ts checks the two agree).
]]
local Codes = {}
do
  -- Job states, as stored and in views; mirrored by JOB_STATE in lib/engine/codes.ts.
  local PENDING, READY, RUNNING, DONE, DEAD, CANCELLED, EXPIRED = 1, 2, 3, 4, 5, 6, 7
  -- Refusals: the script changed nothing and says why.
  local REFUSAL = { JOB_EXISTS = -1, NOT_FOUND = -2, JOB_FINISHED = -3, STALE_ATTEMPT = -4, CANCELLED = -5, VERSION_MISMATCH = -6 }
  -- A partition of the former layout turns a new id away while the partition count changes (it is
  -- closed: MOVED_FIELD in the topic's jobs hash holds the current count); the caller writes it in
  -- the current layout. A schedule's move (lib/engine/relayout-schedules.ts): BUSY, not moved now (an
  -- occurrence of it is running or waits for a retry in the former partition); FROZEN, frozen there
  -- for its move; ADOPTED, made in its current partition from the frozen record.
  local RELAYOUT = { MOVED = -7, BUSY = -8, FROZEN = 3, ADOPTED = 4 }
  local MOVED_FIELD = '#moved'
  -- What a job script did.
  local OUTCOME = {
    CREATED = 1, REPLACED = 2,             -- addJobs
    DUPLICATE = 5, DEBOUNCED = 6,          -- addJobs: a keyed add met its key's job
    CANCELLED = 1, ALREADY_CANCELLED = 0,  -- cancelJob
    RESCHEDULED = 1,                       -- rescheduleJob
    ACKED = 1, ACKED_NOTIFY = 2,           -- ackJobs (NOTIFY: and its end went to the outbox)
    RETRY_SCHEDULED = 1, DEAD_LETTERED = 0, -- failJob, failAttempt
    GIVEN_BACK = 2,                         -- giveBack: back to the ready list, no attempt counted
    STARTED = 1,                            -- startAttempts: live, marked started; run it
    HELD_BACK = 3,                          -- startAttempts: paused, given back uncounted; do not run it
    EXPIRED = 4,                            -- startAttempts: due after its job's expiry: the job expired; do not run it
    ADVANCED = 1, DELETED = 1               -- advanceSchedule, deleteSchedule (putSchedule: CREATED, REPLACED)
  }
  -- holdLease (which otherwise replies the wake counter) and releaseLease.
  local LEASE = { NOT_OWNER = -1, KEPT = 0, RELEASED = 1 }
  -- wakeSweeper.
  local WAKE = { NOTHING = 0, WOKEN = 1, START_SWEEPER = 2 }
  -- startFanout (MARKED, ALREADY_RUNNING) and endFanout (CLEARED, NOT_OURS).
  local FANOUT_MARK = { MARKED = 1, ALREADY_RUNNING = 0, CLEARED = 1, NOT_OURS = 0 }
  -- createKey (CREATED, NAME_TAKEN, TOO_MANY) and revokeKey (REVOKED, NOT_FOUND, LAST_ADMIN).
  local KEY_CHANGE = { CREATED = 1, REVOKED = 1, NAME_TAKEN = -1, TOO_MANY = -2, NOT_FOUND = -3, LAST_ADMIN = -4 }

  Codes.PENDING, Codes.READY, Codes.RUNNING, Codes.DONE, Codes.DEAD = PENDING, READY, RUNNING, DONE, DEAD
  Codes.CANCELLED, Codes.REFUSAL, Codes.RELAYOUT, Codes.MOVED_FIELD = CANCELLED, REFUSAL, RELAYOUT, MOVED_FIELD
  Codes.OUTCOME, Codes.LEASE, Codes.WAKE, Codes.FANOUT_MARK = OUTCOME, LEASE, WAKE, FANOUT_MARK
  Codes.KEY_CHANGE, Codes.EXPIRED = KEY_CHANGE, EXPIRED
end
