--[[
  Shared helpers, prepended to every script by lib/scripts.ts. Declares and touches no keys.

  A job is one field of the topic's jobs hash: field = id, value = msgpack header .. body (JSON
  text). Header slots (H_*) below; a slot holding false means "follow the topic's configuration"
  (max attempts, ttr, backoff) or "none" (url, last error, deadline).
  "Ready" is not stored: a PENDING job that is not in the delayed zset is ready, so moving due
  jobs never rewrites a record.
]]
-- Job states, as stored and in views; mirrored by JOB_STATE in lib/engine/codes.ts.
local PENDING, READY, RUNNING, DONE, DEAD, CANCELLED = 1, 2, 3, 4, 5, 6
local H_STATE, H_RUN_AT, H_CREATED, H_ATTEMPTS, H_MAX, H_TTR, H_BACKOFF, H_URL, H_ERROR, H_UPDATED, H_DEADLINE =
  1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11
-- H_CLAIM: the running attempt's claim token, unique to that claim (ack, fail, start and release
-- must present it; a re-created job's attempt 1 has another). H_STARTED: when a handler started
-- the attempt, false while it is only claimed. H_GIVE_BACKS: claims in a row given back without
-- counting (released after a failed invoke, or timed out before they started).
local H_CLAIM, H_STARTED, H_GIVE_BACKS = 12, 13, 14
local MAX_ERROR_BYTES = 1024 -- keeps a failing job's record small whatever the handler threw
-- Give-backs in a row that cost no attempt; the next counts as a failed attempt, so a job whose
-- handler can never be reached still fails (and dead-letters) instead of cycling forever.
local MAX_GIVE_BACKS = 5

-- Every code a script replies with, by name. Each table is mirrored, name for name and value for
-- value, by the table of the same name in lib/engine/codes.ts (test/integration/codes.test.ts
-- checks the two agree).
-- Refusals: the script changed nothing and says why.
local REFUSAL = { JOB_EXISTS = -1, NOT_FOUND = -2, JOB_FINISHED = -3, STALE_ATTEMPT = -4, CANCELLED = -5 }
-- What a job script did.
local OUTCOME = {
  CREATED = 1, REPLACED = 2,             -- addJobs
  CANCELLED = 1, ALREADY_CANCELLED = 0,  -- cancelJob
  RESCHEDULED = 1,                       -- rescheduleJob
  ACKED = 1,                             -- ackJob
  RETRY_SCHEDULED = 1, DEAD_LETTERED = 0, -- failJob, failAttempt
  GIVEN_BACK = 2,                         -- giveBack: back to the ready list, no attempt counted
  STARTED = 1                             -- startAttempts: live, marked started; run it
}
-- holdLease (which otherwise replies the wake counter) and releaseLease.
local LEASE = { NOT_OWNER = -1, KEPT = 0, RELEASED = 1 }
-- wakeSweeper.
local WAKE = { NOTHING = 0, WOKEN = 1, START_SWEEPER = 2 }
-- startFanout (MARKED, ALREADY_RUNNING) and endFanout (CLEARED, NOT_OURS).
local FANOUT_MARK = { MARKED = 1, ALREADY_RUNNING = 0, CLEARED = 1, NOT_OURS = 0 }

-- Milliseconds on the Redis server's clock, or the fixed clock a test passes. Every script that
-- needs the time reads it once, at its start, from ARGV[1]: `local now = clock(ARGV[1])`.
local function clock(fixed)
  if fixed ~= nil and fixed ~= '' then return tonumber(fixed) end
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

local function decode(record)
  local offset, header = cmsgpack.unpack_one(record)
  -- slots a record of older code lacks; set, so that the header stays an array when encoded
  if header[H_CLAIM] == nil then header[H_CLAIM] = false end
  if header[H_STARTED] == nil then header[H_STARTED] = false end
  if header[H_GIVE_BACKS] == nil then header[H_GIVE_BACKS] = 0 end
  if offset < 0 then return header, '' end
  return header, string.sub(record, offset + 1)
end

local function encode(header, body)
  return cmsgpack.pack(header) .. body
end

local function optional(value)
  if value == nil or value == '' then return false end
  return value
end

local function optionalNumber(value)
  if value == nil or value == '' then return false end
  return tonumber(value)
end

-- Delay in ms before retrying after failed attempt number `attempt` (1-based).
-- spec: 'f:<ms>' | 'e:<baseMs>:<capMs>:<jitterPermille>' | 'l:<ms>,<ms>,...'; rand in [0, 1).
local function retryDelay(spec, attempt, rand)
  local kind = string.sub(spec, 1, 1)
  if kind == 'f' then return tonumber(string.sub(spec, 3)) end
  if kind == 'e' then
    local base, cap, jitter = string.match(spec, '^e:(%d+):(%d+):(%d+)$')
    local d = math.min(tonumber(cap), tonumber(base) * 2 ^ (attempt - 1))
    return math.floor(d - d * (tonumber(jitter) / 1000) * rand)
  end
  local steps = {}
  for step in string.gmatch(string.sub(spec, 3), '%d+') do steps[#steps + 1] = tonumber(step) end
  return steps[math.min(attempt, #steps)]
end

-- Ends a running attempt as failed: schedules the next attempt after the backoff (or after
-- retryAfter ms when given), or dead-letters the job when its attempts are used up.
-- Returns OUTCOME.RETRY_SCHEDULED, dueAt when a retry was scheduled; OUTCOME.DEAD_LETTERED when
-- the job went dead.
local function failAttempt(jobsKey, delayedKey, deadKey, id, h, body, now, err, defaultMax, defaultBackoff, rand, retryAfter)
  h[H_ERROR] = string.sub(err, 1, MAX_ERROR_BYTES)
  h[H_UPDATED] = now
  h[H_DEADLINE] = false
  if h[H_ATTEMPTS] >= (h[H_MAX] or defaultMax) then
    h[H_STATE] = DEAD
    redis.call('ZADD', deadKey, now, id)
    redis.call('HSET', jobsKey, id, encode(h, body))
    return OUTCOME.DEAD_LETTERED, false
  end
  local due = now + (retryAfter or retryDelay(h[H_BACKOFF] or defaultBackoff, h[H_ATTEMPTS], rand))
  h[H_STATE] = PENDING
  h[H_RUN_AT] = due
  redis.call('ZADD', delayedKey, due, id)
  redis.call('HSET', jobsKey, id, encode(h, body))
  return OUTCOME.RETRY_SCHEDULED, due
end

-- True when the job is running the attempt the caller holds: number `attempt` claimed with token
-- `claim`. An attempt claimed before claims had tokens is known by its number alone.
local function isAttempt(h, attempt, claim)
  if h[H_STATE] ~= RUNNING or h[H_ATTEMPTS] ~= tonumber(attempt) then return false end
  if h[H_CLAIM] then return h[H_CLAIM] == claim end
  return true
end

-- Gives a running attempt that never started back to the front of the ready list without counting
-- it (`why` says what happened, for lastError). The give-back after MAX_GIVE_BACKS in a row counts
-- as a failed attempt instead (retry or dead, as failAttempt).
-- Returns OUTCOME.GIVEN_BACK, or failAttempt's reply.
local function giveBack(jobsKey, readyKey, delayedKey, deadKey, id, h, body, now, why, defaultMax, defaultBackoff, rand)
  local n = h[H_GIVE_BACKS] + 1
  h[H_CLAIM], h[H_STARTED] = false, false
  if n > MAX_GIVE_BACKS then
    h[H_GIVE_BACKS] = 0
    local err = 'attempt ' .. h[H_ATTEMPTS] .. ' ' .. why .. ', ' .. n .. ' claims in a row; counted as a failed attempt'
    return failAttempt(jobsKey, delayedKey, deadKey, id, h, body, now, err, defaultMax, defaultBackoff, rand, false)
  end
  h[H_ERROR] = string.sub('claim of attempt ' .. h[H_ATTEMPTS] .. ' given back: ' .. why .. ' (' .. n .. ' of ' .. MAX_GIVE_BACKS .. ' in a row without counting)', 1, MAX_ERROR_BYTES)
  h[H_STATE], h[H_ATTEMPTS], h[H_UPDATED], h[H_DEADLINE], h[H_GIVE_BACKS] = PENDING, h[H_ATTEMPTS] - 1, now, false, n
  redis.call('HSET', jobsKey, id, encode(h, body))
  redis.call('LPUSH', readyKey, id)
  return OUTCOME.GIVEN_BACK
end

-- Counts an attempt's end in `counts` ({ givenBack, retried, deadLettered }) by its outcome code
-- (giveBack's or failAttempt's).
local function tally(counts, code)
  if code == OUTCOME.GIVEN_BACK then
    counts.givenBack = counts.givenBack + 1
  elseif code == OUTCOME.RETRY_SCHEDULED then
    counts.retried = counts.retried + 1
  else
    counts.deadLettered = counts.deadLettered + 1
  end
end

-- The job as the scripts return it: the state with "ready" resolved, the header, then the body.
-- Mirrored by JobView in lib/engine/shapes.ts, in this order.
local function view(delayedKey, id, h, body)
  local state = h[H_STATE]
  if state == PENDING and not redis.call('ZSCORE', delayedKey, id) then state = READY end
  return { id, state, h[H_RUN_AT], h[H_CREATED], h[H_ATTEMPTS], h[H_MAX], h[H_TTR], h[H_BACKOFF],
    h[H_URL], h[H_ERROR], h[H_UPDATED], h[H_DEADLINE], body }
end

-- Score of the zset's first member, or false when it is empty.
local function headScore(key)
  local head = redis.call('ZRANGE', key, 0, 0, 'WITHSCORES')
  if head[2] then return tonumber(head[2]) end
  return false
end
