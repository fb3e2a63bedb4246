--[[
  Takes up to n start tokens of a topic's rate limit (count starts per perMs), shared by every
  fan-out and handler that claims. Two bounds, both kept:
  - the window: perMs is cut into SLOTS slots, a field per slot holding the starts granted in it.
    A grant is allowed while the slots of the last perMs, and the one before them, hold fewer than
    count: any span of perMs then holds at most count starts (conservative by one slot, 1 %).
  - the pace (GCRA): one start every perMs / count, with a tolerance of a tenth of the window (at
    least one start), so starts are spread over the window instead of coming as a herd at its start,
    and a claimer that slept up to that tolerance past its turn catches up.
  Fields of older slots are deleted as seen, so the hash holds at most SLOTS + 3 fields: constant
  work per call.
  KEYS[1] the topic's rate hash (dq:{rate}:<topic>)
  ARGV[1] fixed clock ms or ''  ARGV[2] count  ARGV[3] perMs  ARGV[4] n, tokens wanted (>= 1)
  Returns { granted, slot, waitMs, now }: granted <= n; slot to name when giving unused tokens
  back (lua/returnTokens-1.lua); when granted < n, waitMs until more can be granted, else -1.
]]
--- @include "clock"
local SLOTS = 100 -- slots per window: a grant waits at most one slot longer than an exact window
local key = KEYS[1]
local now = Clock.clock(ARGV[1])
local count, perMs, wanted = tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
local slot = math.floor(now * SLOTS / perMs)
local first = slot - SLOTS
local interval = perMs / count
local tolerance = math.max(perMs / 10, interval)
local used, oldest, tat = 0, nil, now
local fields = redis.call('HGETALL', key)
for i = 1, #fields, 2 do
  if fields[i] == 'tat' then
    tat = math.max(now, tonumber(fields[i + 1]))
  else
    local s, n = tonumber(fields[i]), tonumber(fields[i + 1])
    if s < first then
      redis.call('HDEL', key, fields[i])
    elseif n > 0 then
      used = used + n
      if oldest == nil or s < oldest then oldest = s end
    end
  end
end
-- the theoretical time of the next start may run ahead of now by the tolerance at most
local paced = math.floor((now + tolerance - tat) / interval + 1e-9)
local granted = math.max(0, math.min(wanted, count - used, paced))
if granted > 0 then
  tat = tat + granted * interval
  redis.call('HINCRBY', key, slot, granted)
  redis.call('HSET', key, 'tat', tostring(tat))
  if oldest == nil or slot < oldest then oldest = slot end
  redis.call('PEXPIRE', key, 2 * perMs + 1000) -- outlives the window: an idle topic leaves nothing
end
local waitMs = -1
if granted < wanted then
  waitMs = 1
  -- a full window frees room when its oldest slot leaves it (the current slot is then oldest + SLOTS + 1)
  if used + granted >= count and oldest ~= nil then waitMs = math.max(waitMs, math.ceil((oldest + SLOTS + 1) * perMs / SLOTS) - now) end
  -- the pace allows the next start once tat - now is within the tolerance again
  waitMs = math.max(waitMs, math.ceil(tat + interval - tolerance - now))
end
return { granted, slot, waitMs, now }
