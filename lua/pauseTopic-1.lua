--[[
  Pauses or resumes a topic in one partition: sets or clears PAUSED_FIELD in its jobs hash
  (includes/flow.lua). While it is set, claims take nothing (lua/claimJobs-7.lua,
  lua/claimFlow-6.lua) and starts hold back the attempts claimed before it
  (lua/startAttempts-5.lua); adds, sweeps and acks go on. The engine sets it in every partition of
  the topic before it answers.
  KEYS[1] jobs hash
  ARGV[1] '1' pause, '0' resume  ARGV[2] the name of the API key that asks, or ''
  Returns 1 when the topic's state changed, 0 when it was so already.
]]
--- @include "flow"
if ARGV[1] == '1' then
  return redis.call('HSETNX', KEYS[1], Flow.PAUSED_FIELD, ARGV[2])
end
return redis.call('HDEL', KEYS[1], Flow.PAUSED_FIELD)
