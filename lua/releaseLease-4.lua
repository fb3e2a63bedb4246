--[[
  Gives up the sweeper's lease, unless a wake-up arrived since the caller's last sweep began (then
  it must sweep again). Comparing the wake counter, not the wake list, means a wake-up already
  consumed by the caller's pending BLPOP is not lost either.
  KEYS[1] lease string  KEYS[2] planned-next string  KEYS[3] wake list  KEYS[4] wake counter
  ARGV[1] owner token  ARGV[2] wake counter the caller saw before its last sweep
  ARGV[3] '1' to release whatever happened (out of time) | '0'
  Returns LEASE.RELEASED, LEASE.KEPT (woken since: still held), or LEASE.NOT_OWNER (nothing
          changed). Mirrored by releaseLease in lib/engine/scripts.ts.
]]
--- @include "codes"
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return Codes.LEASE.NOT_OWNER end
if ARGV[3] ~= '1' and tonumber(redis.call('GET', KEYS[4]) or '0') ~= tonumber(ARGV[2]) then return Codes.LEASE.KEPT end
redis.call('DEL', KEYS[1], KEYS[2], KEYS[3])
return Codes.LEASE.RELEASED
