--[[
  Sets a flow key's pinned limits and pause (includes/flow.lua), or clears them: the key's record
  in <jobs>#fconf, which only this script writes (producers cannot change a key's limits). A key
  resumed, or given more room, goes back in the ring when its lane holds ids, so its jobs start
  without waiting for a slot to return; a key paused leaves the ring at its next visit, and its
  claimed attempts are held back at their start.
  KEYS[1] jobs hash of the flow topic
  ARGV[1] fixed clock ms or ''
  ARGV[2] 'clear' (back to the topic's defaults, resumed) or 'set'
  ARGV[3] concurrency: '' leave it, '-' the topic's default, else a number
  ARGV[4] pace count: '' leave it, '-' the topic's default, else a number; ARGV[5] per ms, ARGV[6] burst
  ARGV[7] paused: '' leave it, '1' pause, '0' resume
  ARGV[8] the key  ARGV[9] the name of the API key making the change ('' for none): the record's
          updatedBy, with the time as its updatedAt (a clear deletes the record, and them)
  Returns the key's view after the change (flowView in includes/flow.lua).
]]
--- @include "clock"
--- @include "flow"
local f = Flow.flowKeys(KEYS[1])
local key = ARGV[8]
local now = Clock.clock(ARGV[1])
local conf = Flow.flowConf(f, key) or { false, false, false, false, 0 }
if ARGV[2] == 'clear' then
  conf = { false, false, false, false, 0 }
else
  if ARGV[3] == '-' then conf[Flow.C_CONC] = false elseif ARGV[3] ~= '' then conf[Flow.C_CONC] = tonumber(ARGV[3]) end
  if ARGV[4] == '-' then
    conf[Flow.C_COUNT], conf[Flow.C_PER], conf[Flow.C_BURST] = false, false, false
  elseif ARGV[4] ~= '' then
    conf[Flow.C_COUNT], conf[Flow.C_PER], conf[Flow.C_BURST] = tonumber(ARGV[4]), tonumber(ARGV[5]), tonumber(ARGV[6])
  end
  if ARGV[7] ~= '' then conf[Flow.C_PAUSED] = tonumber(ARGV[7]) end
end
local pinned = conf[Flow.C_CONC] or conf[Flow.C_COUNT] or conf[Flow.C_PAUSED] == 1
conf[Flow.C_BY], conf[Flow.C_AT] = ARGV[9] ~= '' and ARGV[9], now
if pinned then redis.call('HSET', f.conf, key, cmsgpack.pack(conf)) else redis.call('HDEL', f.conf, key) end
-- PINNED_FIELD says to claims and starts whether any key has a pinned record
if redis.call('EXISTS', f.conf) == 1 then
  redis.call('HSET', KEYS[1], Flow.PINNED_FIELD, '1')
else
  redis.call('HDEL', KEYS[1], Flow.PINNED_FIELD)
end

local st = Flow.flowState(f, key)
if conf[Flow.C_PAUSED] ~= 1 then
  -- the claim checks the limits in force when it meets the key
  st[Flow.F_CONC] = 0
  Flow.ringIfClaimable(f, key, st)
end
Flow.saveFlowState(f, key, st, now)
return Flow.flowView(f, key, now)
