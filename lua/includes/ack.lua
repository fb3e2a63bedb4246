--[[
  Acks: running attempts ended as done, by lua/ackJobs-4.lua (acks sent together by one process)
  and by lua/claimJobs-7.lua (a handler that acks its last job and claims its next in one call).
  Rewrites each record's header only (never a body kept apart), or deletes record and body.
]]
--- @include "codes"
--- @include "job"
--- @include "attempts"
--- @include "flow"
--- @include "callbacks"
local Ack = {}
do
  local DONE, CANCELLED, REFUSAL, OUTCOME = Codes.DONE, Codes.CANCELLED, Codes.REFUSAL, Codes.OUTCOME
  local H_STATE, H_KEY, H_UPDATED, H_DEADLINE = Job.H_STATE, Job.H_KEY, Job.H_UPDATED, Job.H_DEADLINE
  local H_STARTED, H_GROUP, decode, save, remove = Job.H_STARTED, Job.H_GROUP, Job.decode, Job.save, Job.remove
  local isAttempt, noteEnd, H_CALLBACK = Attempts.isAttempt, Callbacks.noteEnd, Job.H_CALLBACK
  local flowLeaveMany = Flow.flowLeaveMany

  -- Ends as done, at `now`, the attempts that `argv` names from `from` on in triples (id, attempt
  -- number the caller ran, the attempt's claim token), of the jobs of jobs hash `jobsKey` (their
  -- bodies kept apart in `bodiesKey`; running zset `runningKey`, done zset `doneKey`). A done job
  -- stays readable `retention` ms (0: deleted now, or at the next sweep when it has a group: the
  -- purge takes it out of its group). A job whose callback names its end as done leaves an entry in
  -- the outbox (includes/callbacks.lua). Returns one code per triple, in order: OUTCOME.ACKED
  -- (OUTCOME.ACKED_NOTIFY: and an outbox entry was written), or REFUSAL.NOT_FOUND,
  -- REFUSAL.STALE_ATTEMPT (that claim already timed out, finished or belongs to an earlier
  -- incarnation of the id), REFUSAL.CANCELLED (cancelled while running): nothing changed. Bounded
  -- by the triples (callers send at most ACK_BATCH, lib/engine/attempts.ts).
  local function ackAttempts(jobsKey, bodiesKey, runningKey, doneKey, now, retention, argv, from)
    local result = {}
    -- A flow topic's slots come back at the end, counted per key: the keys' states read in one
    -- HMGET and written in one HSET (flowLeaveMany). The tables made at the first job with a key
    -- (none on another topic).
    local leftKeys, leftCounts = false, false
    for i = from, #argv, 3 do
      local id = argv[i]
      local record = redis.call('HGET', jobsKey, id)
      local code = REFUSAL.NOT_FOUND
      if record then
        local h, inline = decode(record)
        if h[H_STATE] == CANCELLED then
          code = REFUSAL.CANCELLED
        elseif not isAttempt(h, argv[i + 1], argv[i + 2]) then
          code = REFUSAL.STALE_ATTEMPT
        else
          redis.call('ZREM', runningKey, id)
          local key = h[H_KEY]
          if key then
            if not leftKeys then leftKeys, leftCounts = {}, {} end
            local n = leftCounts[key]
            if not n then leftKeys[#leftKeys + 1] = key end
            leftCounts[key] = (n or 0) + 1
          end
          if retention > 0 or h[H_GROUP] then
            -- the last attempt's start stays (its claim time, when never started): its history entry
            if not h[H_STARTED] then h[H_STARTED] = h[H_UPDATED] end
            h[H_STATE], h[H_UPDATED], h[H_DEADLINE] = DONE, now, false
            save(jobsKey, id, h, inline)
            redis.call('ZADD', doneKey, string.format('%d', now + retention), id)
          else
            remove(jobsKey, bodiesKey, id, h)
          end
          code = OUTCOME.ACKED
          if h[H_CALLBACK] and noteEnd(jobsKey, id, h, 1, now) then code = OUTCOME.ACKED_NOTIFY end
        end
      end
      result[#result + 1] = code
    end
    if leftKeys then flowLeaveMany(jobsKey, leftKeys, leftCounts, now) end
    return result
  end

  Ack.ackAttempts = ackAttempts
end
