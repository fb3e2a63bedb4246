--[[
  Records the lateness of attempts started elsewhere than startAttempts-2 and claimJobs-7 (which
  record their own starts), in the topic's stats hash of one partition (includes/lateness.lua).
  KEYS[1] stats hash of one partition (dq:{<partition's tag>}:lateness:<topic>)
  ARGV[1] fixed clock ms or ''  ARGV[2..] lateness of each started attempt, ms
  Returns the minute's count after the call.
]]
--- @include "clock"
--- @include "lateness"
local values = {}
for i = 2, #ARGV do values[#values + 1] = tonumber(ARGV[i]) or 0 end
return Lateness.recordLateness(KEYS[1], Clock.clock(ARGV[1]), values)
