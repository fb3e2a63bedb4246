--[[
  Deletes a schedule and withdraws every occurrence of it that waits: the pending one, and the one
  handed over last while it waits for its first attempt (held back by its jitter, or ready and not
  yet claimed). One that already started runs on, and so do its retries. A schedule holds at most
  these two (includes/occurrences.lua handOver).
  KEYS[1] schedules hash  KEYS[2] schedule ids zset  KEYS[3] schedule next zset  KEYS[4] jobs hash
  KEYS[5] bodies hash  KEYS[6] delayed zset  KEYS[7] running zset  KEYS[8] done zset
  ARGV[1] fixed clock ms or ''  ARGV[2] schedule id
  Returns { OUTCOME.DELETED, 1 when an occurrence was withdrawn else 0 } or
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
  local h = header(k.jobs, r[S_NEXT_ID])
  if h and h[H_STATE] == PENDING then withdrawn = 1 end
  withdraw(k, r[S_NEXT_ID], now)
end
-- the occurrence handed over last, while it waits for its first attempt (held back by its jitter,
-- or ready and not yet claimed); a retry of one that ran follows its backoff
if r[S_LAST_ID] and r[S_LAST_ID] ~= r[S_NEXT_ID] then
  local h = header(k.jobs, r[S_LAST_ID])
  if h and h[H_STATE] == PENDING and h[H_ATTEMPTS] == 0 then
    withdrawn = 1
    withdraw(k, r[S_LAST_ID], now)
  end
end
redis.call('HDEL', KEYS[1], id)
redis.call('ZREM', KEYS[2], id)
redis.call('ZREM', KEYS[3], id)
return { OUTCOME.DELETED, withdrawn }
