--[[
  Finishes a running attempt as done. Rewrites the record's header only (never the body kept
  apart), or deletes record and body.
  KEYS[1] jobs hash  KEYS[2] bodies hash  KEYS[3] running zset  KEYS[4] done zset
  ARGV[1] fixed clock ms or ''  ARGV[2] id  ARGV[3] attempt number the caller ran
  ARGV[4] retention ms (how long the done job stays readable; 0 deletes it now, or at the next
          sweep when it has a group: the purge takes it out of its group)
  ARGV[5] the attempt's claim token
  Returns OUTCOME.ACKED, or REFUSAL.NOT_FOUND, REFUSAL.STALE_ATTEMPT (that claim already timed
          out, finished or belongs to an earlier incarnation of the id), REFUSAL.CANCELLED
          (cancelled while running): nothing changed.
  Mirrored by AckReply in lib/engine/scripts.ts.
]]
--- @include "codes"
--- @include "clock"
--- @include "job"
--- @include "attempts"
local jobsKey, bodiesKey, runningKey, doneKey = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local now, id, retention = clock(ARGV[1]), ARGV[2], tonumber(ARGV[4])
local record = redis.call('HGET', jobsKey, id)
if not record then return REFUSAL.NOT_FOUND end
local h, inline = decode(record)
if h[H_STATE] == CANCELLED then return REFUSAL.CANCELLED end
if not isAttempt(h, ARGV[3], ARGV[5]) then return REFUSAL.STALE_ATTEMPT end

redis.call('ZREM', runningKey, id)
if retention > 0 or h[H_GROUP] then
  h[H_STATE], h[H_UPDATED], h[H_DEADLINE] = DONE, now, false
  save(jobsKey, id, h, inline)
  redis.call('ZADD', doneKey, now + retention, id)
else
  remove(jobsKey, bodiesKey, id, h)
end
return OUTCOME.ACKED
