--[[
  Clears the running fan-out's mark (only its own); it then looks at the ready lists once more.
  KEYS[1] fan-out flag string
  ARGV[1] token of the fan-out that stops
  Returns FANOUT_MARK.CLEARED, or FANOUT_MARK.NOT_OURS: the mark was another's or had expired
          (nothing changed). Mirrored by endFanout in lib/engine/scripts.ts.
]]
--- @include "codes"
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('DEL', KEYS[1])
  return Codes.FANOUT_MARK.CLEARED
end
return Codes.FANOUT_MARK.NOT_OURS
