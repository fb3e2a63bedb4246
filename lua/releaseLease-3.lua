--[[
  Gives up the sweeper's lease, unless a wake-up arrived since the caller last looked (then the
  caller must sweep again, so no wake-up is lost between its last look and its exit).
  KEYS[1] lease string  KEYS[2] planned-next string  KEYS[3] wake list
  ARGV[1] owner token  ARGV[2] '1' to release even with wake-ups pending (out of time) | '0'
  Returns 1 released, 0 wake-ups pending (still held), -1 not the owner (nothing changed)
]]
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return -1 end
if ARGV[2] ~= '1' and redis.call('LLEN', KEYS[3]) > 0 then return 0 end
redis.call('DEL', KEYS[1], KEYS[2])
return 1
