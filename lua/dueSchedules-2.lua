--[[
  Reads the schedules of one topic and partition whose pending occurrence is due, for the sweeper
  to move on (lua/advanceSchedule-8.lua); changes nothing. Their bodies are not replied.
  KEYS[1] schedule next zset  KEYS[2] schedules hash
  ARGV[1] fixed clock ms or ''  ARGV[2] most schedules to reply
  ARGV[3] byte budget of the records read (the first is always read)
  Returns { now, more 0|1, next pending time after those replied or nil, views... } with a view
  (includes/schedules.lua scheduleView, body nil) per due schedule, earliest first; `more` 1 when
  the limit or the budget stopped it before every due one. Mirrored by DueSchedulesReply in
  lib/engine/scripts.ts.
]]
--- @include "clock"
--- @include "budget"
--- @include "schedules"
local now, limit = Clock.clock(ARGV[1]), tonumber(ARGV[2])
local budget = Budget.byteBudget(tonumber(ARGV[3]))
local due = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now, 'LIMIT', 0, limit + 1)
local views = {}
local more = 0
for i, id in ipairs(due) do
  if i > limit then more = 1; break end
  local record = redis.call('HGET', KEYS[2], id)
  if record then
    if not budget.take(#record) then more = 1; break end
    views[#views + 1] = Schedules.scheduleView(id, cmsgpack.unpack(record), false)
  end
end
local later = redis.call('ZRANGEBYSCORE', KEYS[1], '(' .. now, '+inf', 'WITHSCORES', 'LIMIT', 0, 1)
local head = false
if later[2] then head = tonumber(later[2]) end
return { now, more, head, unpack(views) }
