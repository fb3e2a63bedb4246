--[[
  Reads one schedule's record; changes nothing.
  KEYS[1] schedules hash
  ARGV[1] schedule id
  Returns its view (includes/schedules.lua scheduleView, with the body), or nil when there is
  none.
  Mirrored by ScheduleView in lib/engine/scripts.ts.
]]
--- @include "schedules"
local record = redis.call('HGET', KEYS[1], ARGV[1])
if not record then return false end
return scheduleView(ARGV[1], cmsgpack.unpack(record), true)
