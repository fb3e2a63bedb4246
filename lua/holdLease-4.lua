--[[
  Takes or renews the sweeper's lease, so one sweeper runs at a time, and records when it plans to
  look next (adds compare their due time with it to decide whether to wake it).
  KEYS[1] lease string  KEYS[2] planned-next string  KEYS[3] wake list  KEYS[4] wake counter
  ARGV[1] owner token  ARGV[2] lease ms  ARGV[3] planned next look, epoch ms, or '' (unknown)
  ARGV[4] '1' when the caller sweeps right after: pending wake-ups are cleared | '0'
  Returns the wake counter (wake-ups so far) when held, LEASE.NOT_OWNER when another owner holds
  it (nothing changed). The caller passes the counter seen before its sweep to releaseLease.
  Mirrored by holdLease in lib/engine/scripts.ts.
]]
--- @include "codes"
local owner = redis.call('GET', KEYS[1])
if owner and owner ~= ARGV[1] then return Codes.LEASE.NOT_OWNER end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
if ARGV[3] ~= '' then
  redis.call('SET', KEYS[2], ARGV[3], 'PX', ARGV[2])
else
  redis.call('DEL', KEYS[2])
end
if ARGV[4] == '1' then redis.call('DEL', KEYS[3]) end
return tonumber(redis.call('GET', KEYS[4]) or '0')
