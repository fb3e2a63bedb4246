--[[
  Hands out the entries of a partition's outbox that are due (includes/callbacks.lua): each is
  leased, so another caller takes it only once the lease ends (the caller died, or could not add its
  job: it is handed out again then).
  KEYS[1] outbox zset
  ARGV[1] fixed clock ms or ''  ARGV[2] lease ms  ARGV[3] entries at most (bounds the call's work)
  Returns { now, entry... }, the entries oldest first.
]]
--- @include "clock"
local now = Clock.clock(ARGV[1])
local entries = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now, 'LIMIT', 0, tonumber(ARGV[3]))
if #entries == 0 then return { now } end
local leased = { 'XX' }
local leaseEnd = string.format('%d', now + tonumber(ARGV[2]))
for _, entry in ipairs(entries) do
  leased[#leased + 1] = leaseEnd
  leased[#leased + 1] = entry
end
redis.call('ZADD', KEYS[1], unpack(leased))
table.insert(entries, 1, now)
return entries
