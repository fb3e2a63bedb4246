--[[
  Finishes running attempts of one topic and partition as done: acks sent together by one process
  (lib/engine/attempts.ts gathers the acks made in one turn of its event loop into one call).
  Rewrites each record's header only (never a body kept apart), or deletes record and body.
  KEYS[1] jobs hash  KEYS[2] bodies hash  KEYS[3] running zset  KEYS[4] done zset
  ARGV[1] fixed clock ms or ''
  ARGV[2] retention ms (how long a done job stays readable; 0 deletes it now, or at the next
          sweep when it has a group: the purge takes it out of its group)
  ARGV[3..] triples: id, attempt number the caller ran, the attempt's claim token; at most
          ACK_BATCH (lib/engine/attempts.ts) a call, so a call's work is bounded
  A job whose callback names its end as done leaves an entry in the outbox (includes/callbacks.lua).
  Returns one code per triple, in order: OUTCOME.ACKED (OUTCOME.ACKED_NOTIFY: and an outbox entry
          was written), or REFUSAL.NOT_FOUND,
          REFUSAL.STALE_ATTEMPT (that claim already timed out, finished or belongs to an earlier
          incarnation of the id), REFUSAL.CANCELLED (cancelled while running): nothing changed.
  Mirrored by AckReply in lib/engine/scripts.ts.
]]
--- @include "codes"
--- @include "clock"
--- @include "job"
--- @include "attempts"
--- @include "flow"
--- @include "callbacks"
-- what the includes give that the call uses for each job, as locals (a table lookup fewer a use)
local DONE, CANCELLED, REFUSAL, OUTCOME = Codes.DONE, Codes.CANCELLED, Codes.REFUSAL, Codes.OUTCOME
local H_STATE, H_KEY, H_UPDATED, H_DEADLINE = Job.H_STATE, Job.H_KEY, Job.H_UPDATED, Job.H_DEADLINE
local H_STARTED, H_GROUP, decode, save, remove = Job.H_STARTED, Job.H_GROUP, Job.decode, Job.save, Job.remove
local isAttempt, noteEnd, H_CALLBACK = Attempts.isAttempt, Callbacks.noteEnd, Job.H_CALLBACK
local flowLeaveMany = Flow.flowLeaveMany
local jobsKey, bodiesKey, runningKey, doneKey = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local now, retention = Clock.clock(ARGV[1]), ARGV[2] + 0 -- (+ 0 parses once; tonumber twice)
local result = {}
-- A flow topic's slots come back at the end, counted per key: the keys' states read in one HMGET
-- and written in one HSET (flowLeaveMany). The tables made at the first job with a key (none on
-- another topic).
local leftKeys, leftCounts = false, false
for i = 3, #ARGV, 3 do
  local id = ARGV[i]
  local record = redis.call('HGET', jobsKey, id)
  local code = REFUSAL.NOT_FOUND
  if record then
    local h, inline = decode(record)
    if h[H_STATE] == CANCELLED then
      code = REFUSAL.CANCELLED
    elseif not isAttempt(h, ARGV[i + 1], ARGV[i + 2]) then
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
