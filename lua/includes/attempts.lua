--[[
  A running attempt's end: who holds it (its number and claim token), failed (retry after the
  backoff, or dead), or given back without counting.
]]
--- @include "codes"
--- @include "job"
--- @include "flow"
--- @include "priority"
--- @include "callbacks"
local Attempts = {}
do
  local PENDING, RUNNING, DEAD, OUTCOME = Codes.PENDING, Codes.RUNNING, Codes.DEAD, Codes.OUTCOME
  local H_STATE, H_KEY, H_RUN_AT, H_ATTEMPTS, H_MAX = Job.H_STATE, Job.H_KEY, Job.H_RUN_AT, Job.H_ATTEMPTS, Job.H_MAX
  local H_BACKOFF, H_ERROR, H_UPDATED, H_DEADLINE = Job.H_BACKOFF, Job.H_ERROR, Job.H_UPDATED, Job.H_DEADLINE
  local H_CLAIM, H_STARTED, H_GIVE_BACKS = Job.H_CLAIM, Job.H_STARTED, Job.H_GIVE_BACKS
  local delayedMember, save, recordAttempt = Job.delayedMember, Job.save, Job.recordAttempt
  local A_FAILED, A_TIMED_OUT, H_PRIORITY = Job.A_FAILED, Job.A_TIMED_OUT, Job.H_PRIORITY
  local pushHead = Priority.pushHead
  local flowLeave, flowGiveBack = Flow.flowLeave, Flow.flowGiveBack

  local MAX_ERROR_BYTES = 1024 -- keeps a failing job's record small whatever the handler threw
  -- Give-backs in a row that cost no attempt; the next counts as a failed attempt, so a job whose
  -- handler can never be reached still fails (and dead-letters) instead of cycling forever.
  local MAX_GIVE_BACKS = 5

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
  -- retryAfter ms when given), or dead-letters the job when its attempts are used up. `k` holds the
  -- script's jobs, delayed and dead keys; `inline` is what decode gave for the record.
  -- `outcome`: Job.A_TIMED_OUT for an attempt past its deadline (its history entry ends there),
  -- else (nil) A_FAILED. Appends the attempt to the job's history (Job.recordAttempt).
  -- Returns OUTCOME.RETRY_SCHEDULED, dueAt when a retry was scheduled; OUTCOME.DEAD_LETTERED when
  -- the job went dead.
  local function failAttempt(k, id, h, inline, now, err, defaultMax, defaultBackoff, rand, retryAfter, outcome)
    flowLeave(k.jobs, h, now)
    h[H_ERROR] = string.sub(err, 1, MAX_ERROR_BYTES)
    local ended = now
    if outcome == A_TIMED_OUT and h[H_DEADLINE] then ended = math.min(now, h[H_DEADLINE]) end
    recordAttempt(h, ended, outcome or A_FAILED, h[H_ERROR])
    h[H_UPDATED] = now
    h[H_DEADLINE] = false
    if h[H_ATTEMPTS] >= (h[H_MAX] or defaultMax) then
      h[H_STATE] = DEAD
      redis.call('ZADD', k.dead, string.format('%d', now), id)
      save(k.jobs, id, h, inline)
      -- the second value: true when the dead end left an entry in the outbox (includes/callbacks.lua)
      return OUTCOME.DEAD_LETTERED, Callbacks.noteEnd(k.jobs, id, h, 2, now)
    end
    local due = now + (retryAfter or retryDelay(h[H_BACKOFF] or defaultBackoff, h[H_ATTEMPTS], rand))
    h[H_STATE] = PENDING
    h[H_RUN_AT] = due
    redis.call('ZADD', k.delayed, due, delayedMember(id, h[H_KEY], h[Job.H_PRIORITY]))
    save(k.jobs, id, h, inline)
    return OUTCOME.RETRY_SCHEDULED, due
  end

  -- True when the job is running the attempt the caller holds: number `attempt` claimed with token
  -- `claim`.
  local function isAttempt(h, attempt, claim)
    return h[H_STATE] == RUNNING and h[H_ATTEMPTS] == tonumber(attempt) and h[H_CLAIM] == claim
  end

  -- Puts ids back at the front of their ready list (a flow topic's: of their keys' lanes; one with a
  -- priority: before the first of its priority, includes/priority.lua), their
  -- keys' slots returned: `backs` holds id, header pairs in the order they were claimed, and the last
  -- goes back first, so that several of one list or key keep that order. A flow topic's ids go back
  -- key by key, the keys in the order of their first ids, so that the keys go back in the ring (at
  -- its tail) in that order too and the next claim takes them so. `k`: jobs, ready.
  local function backToHead(k, backs, now)
    if #backs == 0 then return end
    local keys, places = {}, {}
    for i = 1, #backs - 1, 2 do
      local key = backs[i + 1][H_KEY]
      if key then
        local at = places[key]
        if not at then
          at = {}
          places[key] = at
          keys[#keys + 1] = key
        end
        at[#at + 1] = i
      end
    end
    for i = #backs - 1, 1, -2 do
      local h = backs[i + 1]
      if h[H_PRIORITY] and not h[H_KEY] then
        pushHead(k.jobs, k.ready, backs[i], h[H_PRIORITY])
      elseif not h[H_KEY] then
        redis.call('LPUSH', k.ready, backs[i])
      end
    end
    for _, key in ipairs(keys) do
      local at = places[key]
      for j = #at, 1, -1 do flowGiveBack(k.jobs, backs[at[j]], backs[at[j] + 1], now) end
    end
  end

  -- Gives a running attempt that never started back to the front of the ready list (a flow topic's:
  -- of its key's lane) without counting
  -- it (`why` says what happened, for lastError). The give-back after MAX_GIVE_BACKS in a row counts
  -- as a failed attempt instead (retry or dead, as failAttempt). `k` as for failAttempt, and k.ready.
  -- With `backs` (a script giving several back), the id goes back when the script passes `backs` to
  -- backToHead, once it has looked at all. Returns OUTCOME.GIVEN_BACK, or failAttempt's reply.
  local function giveBack(k, id, h, inline, now, why, defaultMax, defaultBackoff, rand, backs)
    local n = h[H_GIVE_BACKS] + 1
    h[H_CLAIM], h[H_STARTED] = false, false
    if n > MAX_GIVE_BACKS then
      h[H_GIVE_BACKS] = 0
      local err = 'attempt ' .. h[H_ATTEMPTS] .. ' ' .. why .. ', ' .. n .. ' claims in a row; counted as a failed attempt'
      return failAttempt(k, id, h, inline, now, err, defaultMax, defaultBackoff, rand, false)
    end
    h[H_ERROR] = string.sub('claim of attempt ' .. h[H_ATTEMPTS] .. ' given back: ' .. why .. ' (' .. n .. ' of ' .. MAX_GIVE_BACKS .. ' in a row without counting)', 1, MAX_ERROR_BYTES)
    h[H_STATE], h[H_ATTEMPTS], h[H_UPDATED], h[H_DEADLINE], h[H_GIVE_BACKS] = PENDING, h[H_ATTEMPTS] - 1, now, false, n
    save(k.jobs, id, h, inline)
    if backs then
      backs[#backs + 1] = id
      backs[#backs + 1] = h
    else
      backToHead(k, { id, h }, now)
    end
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

  Attempts.failAttempt, Attempts.isAttempt, Attempts.backToHead = failAttempt, isAttempt, backToHead
  Attempts.giveBack, Attempts.tally = giveBack, tally
end
