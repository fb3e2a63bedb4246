--[[
  Reads one schedule's record; changes nothing.
  KEYS[1] schedules hash
  ARGV[1] schedule id
  Returns its view (includes/schedules.lua scheduleView, with the body), or nil when there is
  none; while the partition count changes, when there is none in this partition of a former
  layout, closed by a schedule's move (MOVE.MARK in the schedules hash), the current partition
  count (a number): it may have moved to that layout. A schedule frozen for its move
  (lua/deleteSchedule-8.lua 'freeze') is still replied.
  Mirrored by ScheduleView and GetScheduleReply in lib/engine/scripts.ts.
]]
--- @include "schedules"
-- the record, and the closing mark read with it (no request of its own)
local got = redis.call('HMGET', KEYS[1], ARGV[1], Schedules.MOVE.MARK)
if got[1] then return Schedules.scheduleView(ARGV[1], cmsgpack.unpack(got[1]), true) end
if got[2] then return tonumber(got[2]) end
return false
