--[[
  Deletes a schedule and withdraws its pending occurrence (one that already started runs on).
  KEYS[1] schedules hash  KEYS[2] schedule ids zset  KEYS[3] schedule next zset  KEYS[4] jobs hash
  KEYS[5] bodies hash  KEYS[6] delayed zset  KEYS[7] running zset  KEYS[8] done zset
  ARGV[1] fixed clock ms or ''  ARGV[2] schedule id
  Returns { OUTCOME.DELETED, 1 when a pending occurrence was withdrawn else 0 } or
          { REFUSAL.NOT_FOUND }. Mirrored by DeleteScheduleReply in lib/engine/scripts.ts.
]]
--- @include "codes"
--- @include "clock"
--- @include "job"
--- @include "cancel"
--- @include "schedules"
local k = { jobs = KEYS[4], bodies = KEYS[5], delayed = KEYS[6], running = KEYS[7], done = KEYS[8] }
local now, id = clock(ARGV[1]), ARGV[2]
local record = redis.call('HGET', KEYS[1], id)
if not record then return { REFUSAL.NOT_FOUND } end
local r = cmsgpack.unpack(record)
local withdrawn = 0
if r[S_NEXT_ID] then
  local pending = redis.call('HGET', k.jobs, r[S_NEXT_ID])
  if pending and decode(pending)[H_STATE] == PENDING then withdrawn = 1 end
  withdraw(k, r[S_NEXT_ID], now)
end
redis.call('HDEL', KEYS[1], id)
redis.call('ZREM', KEYS[2], id)
redis.call('ZREM', KEYS[3], id)
return { OUTCOME.DELETED, withdrawn }
