--[[
  The scripts' clock: the Redis server's, so that Lambdas with skewed clocks agree.
]]
-- Milliseconds on the Redis server's clock, or the fixed clock a test passes. Every script that
-- needs the time reads it once, at its start, from ARGV[1]: `local now = clock(ARGV[1])`.
local function clock(fixed)
  if fixed ~= nil and fixed ~= '' then return tonumber(fixed) end
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
