--[[
  A handler is about to run a batch: marks each attempt that is still live as started (from now on
  a timeout counts it) and says which are live. An attempt is live while its job is running that
  claim, before its deadline, and not started already (a duplicate event of the same attempt).
  Rewrites each record's header only, and stops before the job whose record would pass the byte
  budget (never before the first). Records how late each started attempt is (now - its runAt) in
  the partition's lateness stats (includes/lateness.lua).
  While the topic is paused, or a flow topic's job's key is (includes/flow.lua), a live attempt
  is held back instead: given back to the head of the ready list (its key's lane) without
  counting, as if never claimed, its key's slot returned. So no job starts after a pause answered.
  A live attempt whose job has an expiry (H_EXPIRES) at or before now is not started: the job ends
  as EXPIRED (expireNow in includes/cancel.lua: out of running, its key's slot returned, kept in
  the done zset for the retention, counted). A job without one costs one table index more.
  KEYS[1] jobs hash  KEYS[2] the topic's lateness stats hash of the same partition
  KEYS[3] running zset  KEYS[4] ready list  KEYS[5] done zset
  ARGV[1] fixed clock ms or ''  ARGV[2] byte budget of the records read
  ARGV[3] retention ms of a job that expires here
  ARGV[4..] triples: id, attempt number, claim token
  Returns { now, then one code per triple looked at, in order } (fewer codes than triples: the
          budget was reached, and the caller sends the rest in another call): OUTCOME.STARTED (run
          it), or REFUSAL.NOT_FOUND, REFUSAL.CANCELLED, REFUSAL.STALE_ATTEMPT (ended, re-created,
          past its deadline, or started already), OUTCOME.HELD_BACK (paused: given back),
          OUTCOME.EXPIRED (due after its expiry: the job expired): do not run it. `now` (the clock the deadlines were checked on) spares a handler its own TIME
          request: it sets the handler's offset to the Redis clock. Mirrored by StartReply in
          lib/engine/scripts.ts.
]]
--- @include "codes"
--- @include "clock"
--- @include "job"
--- @include "attempts"
--- @include "cancel"
--- @include "flow"
--- @include "lateness"
-- what the includes give that the call uses for each job, as locals (a table lookup fewer a use)
local PENDING, CANCELLED, REFUSAL, OUTCOME = Codes.PENDING, Codes.CANCELLED, Codes.REFUSAL, Codes.OUTCOME
local H_STATE, H_KEY, H_RUN_AT, H_ATTEMPTS = Job.H_STATE, Job.H_KEY, Job.H_RUN_AT, Job.H_ATTEMPTS
local H_UPDATED, H_DEADLINE, H_CLAIM, H_STARTED = Job.H_UPDATED, Job.H_DEADLINE, Job.H_CLAIM, Job.H_STARTED
local H_GIVE_BACKS, H_EXPIRES, decode, save = Job.H_GIVE_BACKS, Job.H_EXPIRES, Job.decode, Job.save
local isAttempt = Attempts.isAttempt
local C_PAUSED, flowConf = Flow.C_PAUSED, Flow.flowConf
local jobsKey, runningKey = KEYS[1], KEYS[3]
local now = Clock.clock(ARGV[1])
-- the byte budget (Budget.byteBudget's rule, not strict, counted inline: a table and a closure
-- fewer a call): the first record always fits
local budget, budgetUsed, budgetJobs = ARGV[2] + 0, 0, 0 -- (+ 0 parses once; tonumber twice)
local result = { now }
-- the lateness of the attempts started (includes/lateness.lua), made at the first start
local late = false
-- the pause mark, and whether a flow topic's keys have pinned limits or a pause, read with the
-- first record (no key has pinned limits or a pause when PINNED_FIELD is not set)
local first = redis.call('HMGET', jobsKey, Flow.PAUSED_FIELD, Flow.PINNED_FIELD, ARGV[4] or Flow.PAUSED_FIELD)
local topicHeld, anyPinned = first[1] and true or false, first[2] and true or false

-- Jobs held back (a running attempt that was never started goes back as if never claimed): its
-- record and the running zset now, its id (then its header) in `held`, back at the head of the ready
-- list (its key's lane) once the call has looked at every attempt (backToHead in
-- includes/attempts.lua). Made at the first hold-back.
local held = false

for i = 4, #ARGV, 3 do
  local id = ARGV[i]
  local record
  if i == 4 then record = first[3] else record = redis.call('HGET', jobsKey, id) end
  local code = REFUSAL.NOT_FOUND
  if record then
    if budgetJobs > 0 and budgetUsed + #record > budget then break end
    budgetUsed, budgetJobs = budgetUsed + #record, budgetJobs + 1
    local h, inline = decode(record)
    local key, paused = h[H_KEY], topicHeld
    if h[H_STATE] == CANCELLED then
      code = REFUSAL.CANCELLED
    elseif not isAttempt(h, ARGV[i + 1], ARGV[i + 2]) or h[H_STARTED] or (h[H_DEADLINE] and h[H_DEADLINE] <= now) then
      code = REFUSAL.STALE_ATTEMPT
    elseif h[H_EXPIRES] and h[H_EXPIRES] <= now then
      Cancel.expireNow({ jobs = jobsKey, running = runningKey, done = KEYS[5] }, id, h, inline, now, tonumber(ARGV[3]))
      code = OUTCOME.EXPIRED
    else
      -- a flow topic's job whose key is paused
      if not paused and key and anyPinned then
        local conf = flowConf(Flow.flowKeys(jobsKey), key)
        paused = conf and conf[C_PAUSED] == 1
      end
      if paused then
        h[H_STATE], h[H_ATTEMPTS], h[H_UPDATED], h[H_DEADLINE], h[H_CLAIM] = PENDING, h[H_ATTEMPTS] - 1, now, false, false
        save(jobsKey, id, h, inline)
        redis.call('ZREM', runningKey, id)
        held = held or {}
        held[#held + 1] = id
        held[#held + 1] = h
        code = OUTCOME.HELD_BACK
      else
        h[H_STARTED], h[H_GIVE_BACKS] = now, 0
        save(jobsKey, id, h, inline)
        late = late or {}
        late[#late + 1] = now - h[H_RUN_AT]
        code = OUTCOME.STARTED
      end
    end
  end
  result[#result + 1] = code
end
if held then Attempts.backToHead({ jobs = jobsKey, ready = KEYS[4] }, held, now) end
if late then Lateness.recordLateness(KEYS[2], now, late) end
return result
