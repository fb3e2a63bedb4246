--[[
  Marks a fan-out as running, unless one already is: a running fan-out drains every topic and
  looks again before it stops, so a second one would only add cold starts.
  KEYS[1] fan-out flag string
  ARGV[1] token of the fan-out to start  ARGV[2] ms the mark lasts if that fan-out dies
  Returns 1 marked (invoke it), 0 one is already running (it will see the new work)
]]
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then return 1 end
return 0
