--[[
  Marks a fan-out as running, unless one already is: a running fan-out drains every topic and
  looks again before it stops, so a second one would only add cold starts.
  KEYS[1] fan-out flag string
  ARGV[1] token of the fan-out to start  ARGV[2] ms the mark lasts if that fan-out dies
  Returns FANOUT_MARK.MARKED (invoke it), or FANOUT_MARK.ALREADY_RUNNING (it will see the new
          work). Mirrored by startFanout in lib/engine/scripts.ts.
  Safe to retry with the same token after a lost reply: the mark is already the caller's, so
  it answers MARKED again (and renews it).
]]
--- @include "codes"
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then return Codes.FANOUT_MARK.MARKED end
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return Codes.FANOUT_MARK.MARKED
end
return Codes.FANOUT_MARK.ALREADY_RUNNING
