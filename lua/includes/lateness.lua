--[[
  Lateness at start, for GET /topics and the dashboard, in a topic's stats hash of one partition:
  per minute of the last hour (slot = minute mod 60) a field 'm<slot>' holding
  '<minute>|<count>|<max ms>', and a field 'm<slot>/<bin>' per histogram bin holding its count,
  four bins per doubling (bin = floor(4 * log2(ms + 1)): a bin's upper bound is at most 19 % above
  any value in it; lateness is counted up to LATENESS_MAX_MS). A record adds to the counts with
  HINCRBY and rewrites the minute's field: it never reads or rewrites the histogram, so its cost
  does not grow with it. A slot found holding an older minute is cleared first (its bins deleted).
  The hash expires an hour after the last start, so an idle topic leaves nothing behind.
  Read back by lib/engine/lateness.ts.
]]
local Lateness = {}
do
  local LATENESS_MAX_MS = 2147483647 -- about 24.9 days; a later start counts as this late
  local LATENESS_MAX_BIN = 124 -- floor(4 * log2(LATENESS_MAX_MS + 1))

  -- Adds `values` (lateness in ms) to the minute of `now` (ms) in stats hash `key`; returns the
  -- minute's count after it. Bounded: a HINCRBY per distinct bin, LATENESS_MAX_BIN + 1 fields
  -- deleted once a minute.
  local function recordLateness(key, now, values)
    local minute = math.floor(now / 60000)
    local field = 'm' .. (minute % 60)
    local n, max = 0, 0
    local head = redis.call('HGET', key, field)
    if head then
      local m, rn, rmax = string.match(head, '^(%d+)|(%d+)|(%d+)$')
      if m and tonumber(m) == minute then
        n, max = tonumber(rn), tonumber(rmax)
      else
        local old = {}
        for b = 0, LATENESS_MAX_BIN do old[b + 1] = field .. '/' .. b end
        redis.call('HDEL', key, unpack(old))
      end
    end
    local counts = {}
    for _, value in ipairs(values) do
      local ms = math.min(LATENESS_MAX_MS, math.max(0, math.floor(value)))
      local b = math.floor(4 * math.log(ms + 1) / math.log(2))
      counts[b] = (counts[b] or 0) + 1
      n = n + 1
      if ms > max then max = ms end
    end
    for b, c in pairs(counts) do redis.call('HINCRBY', key, field .. '/' .. b, c) end
    redis.call('HSET', key, field, minute .. '|' .. n .. '|' .. max)
    redis.call('PEXPIRE', key, 3720000)
    return n
  end

  Lateness.recordLateness = recordLateness
end
