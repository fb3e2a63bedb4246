--[[
  Lateness at start, for GET /topics and the dashboard, in a topic's stats hash of one partition:
  per minute of the last hour (slot = minute mod 60) a field 'm<slot>' holding '<minute>|<max ms>',
  and a field 'm<slot>/<bin>' per histogram bin holding its count (the minute's count is their sum),
  four bins per doubling (bin = floor(4 * log2(ms + 1)): a bin's upper bound is at most 19 % above
  any value in it; lateness is counted up to LATENESS_MAX_MS). A record adds to the counts with
  HINCRBY and reads the minute's field; it rewrites that field only for a new minute or a new
  largest value, and sets the hash's expiry once a minute. It never reads or rewrites the histogram,
  so its cost does not grow with it: a start of one job costs an HGET and an HINCRBY. A slot found
  holding an older minute is cleared first (its bins deleted). The hash expires 62 to 63 minutes
  after the last start (its expiry, set at the first start of each minute, is 63 minutes), so an
  idle topic leaves nothing behind. Read back by lib/engine/lateness.ts.
]]
local Lateness = {}
do
  local LATENESS_MAX_MS = 2147483647 -- about 24.9 days; a later start counts as this late
  local LATENESS_MAX_BIN = 124 -- floor(4 * log2(LATENESS_MAX_MS + 1))

  -- The bin of lateness `value` (ms), and the value as counted (an integer, at most LATENESS_MAX_MS).
  local function binOf(value)
    local ms = math.min(LATENESS_MAX_MS, math.max(0, math.floor(value)))
    return math.floor(4 * math.log(ms + 1) / math.log(2)), ms
  end

  -- Adds `values` (lateness in ms, at least one) to the minute of `now` (ms) in stats hash `key`.
  -- Bounded: a HINCRBY per distinct bin, LATENESS_MAX_BIN + 1 fields deleted once a minute.
  local function recordLateness(key, now, values)
    local minute = math.floor(now / 60000)
    -- (numbers through '%d': a number joined with .. costs a '%.14g' format, one passed to
    -- redis.call a '%.17g')
    local field = string.format('m%d', minute % 60)
    local max, known = -1, false
    local head = redis.call('HGET', key, field)
    if head then
      local m, rmax = string.match(head, '^(%d+)|(%d+)$')
      if m and m + 0 == minute then -- (+ 0 parses once; tonumber twice)
        max, known = rmax + 0, true
      else
        local old = {}
        for b = 0, LATENESS_MAX_BIN do old[b + 1] = string.format('%s/%d', field, b) end
        redis.call('HDEL', key, unpack(old))
      end
    end
    local top = max
    if #values == 1 then
      -- one start (a handler's event of one job): its bin counted, no table
      local b, ms = binOf(values[1])
      redis.call('HINCRBY', key, string.format('%s/%d', field, b), '1')
      if ms > top then top = ms end
    else
      local counts = {}
      for i = 1, #values do
        local b, ms = binOf(values[i])
        counts[b] = (counts[b] or 0) + 1
        if ms > top then top = ms end
      end
      for b, c in pairs(counts) do redis.call('HINCRBY', key, string.format('%s/%d', field, b), string.format('%d', c)) end
    end
    if top > max then redis.call('HSET', key, field, string.format('%d|%d', minute, top)) end
    if not known then redis.call('PEXPIRE', key, '3780000') end
  end

  Lateness.recordLateness = recordLateness
end
