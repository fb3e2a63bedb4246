--[[
  Records the lateness of attempts a handler just started, for GET /topics and the dashboard: one
  field per minute of the last hour (slot = minute mod 60) in the topic's stats hash, each holding
  that minute's count, largest lateness and a histogram with four bins per doubling
  (bin = floor(4 * log2(ms + 1)): a bin's upper bound is at most 19 % above any value in it).
  A field found holding an older minute is started afresh. The hash expires an hour after the
  last start, so an idle topic leaves nothing behind. Bounded: at most a batch of values per call,
  at most ~110 bins per field, 60 fields per topic.
  KEYS[1] stats hash of one partition (dq:{<partition's tag>}:lateness:<topic>)
  ARGV[1] fixed clock ms or ''  ARGV[2..] lateness of each started attempt, ms
  Field value: '<minute>|<count>|<max ms>|<bin>=<count>,...' (bins ascending).
  Returns the minute's count after the call.
]]
--- @include "clock"
local key = KEYS[1]
local now = clock(ARGV[1])
local minute = math.floor(now / 60000)
local field = 'm' .. (minute % 60)
local n, max, bins = 0, 0, {}
local raw = redis.call('HGET', key, field)
if raw then
  local m, rn, rmax, rest = string.match(raw, '^(%d+)|(%d+)|(%d+)|(.*)$')
  if m and tonumber(m) == minute then
    n, max = tonumber(rn), tonumber(rmax)
    for b, c in string.gmatch(rest, '(%d+)=(%d+)') do bins[tonumber(b)] = tonumber(c) end
  end
end
for i = 2, #ARGV do
  local ms = math.max(0, math.floor(tonumber(ARGV[i]) or 0))
  local b = math.floor(4 * math.log(ms + 1) / math.log(2))
  bins[b] = (bins[b] or 0) + 1
  n = n + 1
  if ms > max then max = ms end
end
local order = {}
for b in pairs(bins) do order[#order + 1] = b end
table.sort(order)
local parts = {}
for i, b in ipairs(order) do parts[i] = b .. '=' .. bins[b] end
redis.call('HSET', key, field, minute .. '|' .. n .. '|' .. max .. '|' .. table.concat(parts, ','))
redis.call('PEXPIRE', key, 3720000)
return n
