--[[
  The scripts' clock: the Redis server's, so that Lambdas with skewed clocks agree.
]]
--- @include "call"
local Clock = {}
do
  local onEachCall = Call.onEachCall

  -- The call's reading of the clock, made by clock: Redis TIME's reply as numbers (seconds,
  -- microseconds), or the fixed ms a test passes. clockTicks reuses it, so a call reads TIME and
  -- parses its reply at most once. (A string's `+ 0` parses it once; tonumber parses it twice, a
  -- strtod each.)
  local clockSeconds, clockMicros, clockFixedMs = nil, nil, nil
  onEachCall(function() clockSeconds, clockMicros, clockFixedMs = nil, nil, nil end)

  -- Reads TIME into clockSeconds and clockMicros.
  local function readTime()
    local t = redis.call('TIME')
    clockSeconds, clockMicros = t[1] + 0, t[2] + 0
  end

  -- Milliseconds on the Redis server's clock, or the fixed clock a test passes. Every script that
  -- needs the time reads it once, at its start, from ARGV[1]: `local now = Clock.clock(ARGV[1])`.
  local function clock(fixed)
    if fixed ~= nil and fixed ~= '' then
      clockFixedMs = tonumber(fixed)
      return clockFixedMs
    end
    readTime()
    return clockSeconds * 1000 + math.floor(clockMicros / 1000)
  end

  -- Where ticks count from: 2025-01-01T00:00:00Z, in seconds since 1970.
  local TICKS_EPOCH_S = 1735689600

  -- The call's clock in ticks of 20 µs since TICKS_EPOCH_S (below 1e14 until 2088): from the reading
  -- clock made (a test's fixed ms give ms × 50), else from TIME, read once a call.
  local function clockTicks()
    if clockFixedMs then return math.floor((clockFixedMs - TICKS_EPOCH_S * 1000) * 50) end
    if not clockSeconds then readTime() end
    return (clockSeconds - TICKS_EPOCH_S) * 50000 + math.floor(clockMicros / 20)
  end

  Clock.clock, Clock.clockTicks = clock, clockTicks
end
