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
  Returns one code per triple, in order: OUTCOME.ACKED, or REFUSAL.NOT_FOUND,
          REFUSAL.STALE_ATTEMPT (that claim already timed out, finished or belongs to an earlier
          incarnation of the id), REFUSAL.CANCELLED (cancelled while running): nothing changed.
  Mirrored by AckReply in lib/engine/scripts.ts.
]]
--- @include "codes"
--- @include "clock"
--- @include "job"
--- @include "attempts"
--- @include "flow"
local jobsKey, bodiesKey, runningKey, doneKey = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local now, retention = clock(ARGV[1]), tonumber(ARGV[2])
local result = {}
-- Each record read and decoded first, so that the flow keys' states are read in one HMGET; the
-- keys' states are written once at the end (includes/flow.lua, flowBatch); one ack alone needs no
-- batch (its tables cost more than they save).
if #ARGV > 5 then flowBatch() end
local rows, keys = {}, {}
for i = 3, #ARGV, 3 do
  local record = redis.call('HGET', jobsKey, ARGV[i])
  local row = { record = record }
  if record then
    row.h, row.inline = decode(record)
    if row.h[H_KEY] then keys[#keys + 1] = row.h[H_KEY] end
  end
  rows[#rows + 1] = row
end
if #keys > 0 then flowPrefetch(flowKeys(jobsKey), keys) end
local seen = {}
for i = 3, #ARGV, 3 do
  local id = ARGV[i]
  local row = rows[#result + 1]
  if seen[id] then
    -- the same id again: read after the first one's change
    row = { record = redis.call('HGET', jobsKey, id) }
    if row.record then row.h, row.inline = decode(row.record) end
  end
  seen[id] = true
  local code = REFUSAL.NOT_FOUND
  if row.record then
    local h, inline = row.h, row.inline
    if h[H_STATE] == CANCELLED then
      code = REFUSAL.CANCELLED
    elseif not isAttempt(h, ARGV[i + 1], ARGV[i + 2]) then
      code = REFUSAL.STALE_ATTEMPT
    else
      redis.call('ZREM', runningKey, id)
      flowLeave(jobsKey, h, now)
      if retention > 0 or h[H_GROUP] then
        h[H_STATE], h[H_UPDATED], h[H_DEADLINE] = DONE, now, false
        save(jobsKey, id, h, inline)
        redis.call('ZADD', doneKey, now + retention, id)
      else
        remove(jobsKey, bodiesKey, id, h)
      end
      code = OUTCOME.ACKED
    end
  end
  result[#result + 1] = code
end
flowFlush()
return result
