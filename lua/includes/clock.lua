--[[
  The scripts' clock: the Redis server's, so that Lambdas with skewed clocks agree.
]]
--- @include "call"
local Clock = {}
do
  local onEachCall = Call.onEachCall

  -- The call's reading of the clock, made by clock: Redis TIME's reply ({ seconds, microseconds }),
  -- or the fixed ms a test passes. clockTicks reuses it, so a call reads TIME at most once.
  local clockReading, clockFixedMs = nil, nil
  onEachCall(function() clockReading, clockFixedMs = nil, nil end)

  -- Milliseconds on the Redis server's clock, or the fixed clock a test passes. Every script that
  -- needs the time reads it once, at its start, from ARGV[1]: `local now = Clock.clock(ARGV[1])`.
  local function clock(fixed)
    if fixed ~= nil and fixed ~= '' then
      clockFixedMs = tonumber(fixed)
      return clockFixedMs
    end
    local t = redis.call('TIME')
    clockReading = t
    return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  end

  -- Where ticks count from: 2025-01-01T00:00:00Z, in seconds since 1970.
  local TICKS_EPOCH_S = 1735689600

  -- The call's clock in ticks of 20 µs since TICKS_EPOCH_S (below 1e14 until 2088): from the reading
  -- clock made (a test's fixed ms give ms × 50), else from TIME, read once a call. Worked out once a
  -- call and kept in the reading (its third slot): every write of a record asks (nextVersion), and
  -- each tonumber of the reply's strings costs a strtod.
  local function clockTicks()
    if clockFixedMs then return math.floor((clockFixedMs - TICKS_EPOCH_S * 1000) * 50) end
    if not clockReading then clockReading = redis.call('TIME') end
    local ticks = clockReading[3]
    if not ticks then
      ticks = (tonumber(clockReading[1]) - TICKS_EPOCH_S) * 50000 + math.floor(tonumber(clockReading[2]) / 20)
      clockReading[3] = ticks
    end
    return ticks
  end

  Clock.clock, Clock.clockTicks = clock, clockTicks
end
