--[[
  Records the lateness of attempts a handler just started, for GET /topics and the dashboard, in
  the topic's stats hash of one partition: per minute of the last hour (slot = minute mod 60) a
  field 'm<slot>' holding '<minute>|<count>|<max ms>', and a field 'm<slot>/<bin>' per histogram
  bin holding its count, four bins per doubling (bin = floor(4 * log2(ms + 1)): a bin's upper bound
  is at most 19 % above any value in it; lateness is counted up to MAX_MS). A call adds to the
  counts with HINCRBY and rewrites the minute's field: it never reads or rewrites the histogram, so
  its cost does not grow with it. A slot found holding an older minute is cleared first (its bins
  deleted). The hash expires an hour after the last start, so an idle topic leaves nothing behind.
  Bounded: at most a batch of values per call, MAX_BIN + 1 fields deleted once a minute.
  KEYS[1] stats hash of one partition (dq:{<partition's tag>}:lateness:<topic>)
  ARGV[1] fixed clock ms or ''  ARGV[2..] lateness of each started attempt, ms
  Returns the minute's count after the call.
]]
--- @include "clock"
local MAX_MS = 2147483647 -- about 24.9 days; a later start counts as this late
local MAX_BIN = 124 -- floor(4 * log2(MAX_MS + 1))
local key = KEYS[1]
local now = clock(ARGV[1])
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
    for b = 0, MAX_BIN do old[b + 1] = field .. '/' .. b end
    redis.call('HDEL', key, unpack(old))
  end
end
local counts = {}
for i = 2, #ARGV do
  local ms = math.min(MAX_MS, math.max(0, math.floor(tonumber(ARGV[i]) or 0)))
  local b = math.floor(4 * math.log(ms + 1) / math.log(2))
  counts[b] = (counts[b] or 0) + 1
  n = n + 1
  if ms > max then max = ms end
end
for b, c in pairs(counts) do redis.call('HINCRBY', key, field .. '/' .. b, c) end
redis.call('HSET', key, field, minute .. '|' .. n .. '|' .. max)
redis.call('PEXPIRE', key, 3720000)
return n
