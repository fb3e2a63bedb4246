--[[
  Removes entries from a partition's outbox (includes/callbacks.lua) once the jobs they name were
  added (or found added before).
  KEYS[1] outbox zset
  ARGV[1..] the entries, as takeCallbacks handed them out; at most 100 a call
  Returns how many it removed.
]]
return redis.call('ZREM', KEYS[1], unpack(ARGV))
