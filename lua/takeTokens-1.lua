--[[
  Takes up to n start tokens of a topic's rate limit (count starts per perMs), shared by every
  fan-out and handler that claims. The window of perMs is cut into SLOTS slots; a field per slot
  holds the starts granted in it. A grant is allowed while the slots of the last perMs, and the
  one before them, hold fewer than count: any span of perMs then holds at most count starts
  (conservative by one slot, 1 % of the window). A slot grants at most ceil(count / SLOTS), so the
  starts are spread over the window instead of all coming at its beginning (a herd). Fields of
  older slots are deleted as seen, so the hash holds at most SLOTS + 2 fields: constant work per call.
  KEYS[1] the topic's rate hash (dq:{rate}:<topic>)
  ARGV[1] fixed clock ms or ''  ARGV[2] count  ARGV[3] perMs  ARGV[4] n, tokens wanted (>= 1)
  Returns { granted, slot, waitMs, now }: granted <= n; slot to name when giving unused tokens
  back (lua/returnTokens-1.lua); when granted < n, waitMs until more can be granted (the oldest slot
  holding starts leaves a full window, or the next slot begins after a full slot), else -1.
]]
local SLOTS = 100 -- slots per window: a grant waits at most one slot longer than an exact window
local key = KEYS[1]
local now = clock(ARGV[1])
local count, perMs, wanted = tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
local slot = math.floor(now * SLOTS / perMs)
local first = slot - SLOTS
local perSlot = math.ceil(count / SLOTS)
local used, oldest, inSlot = 0, nil, 0
local fields = redis.call('HGETALL', key)
for i = 1, #fields, 2 do
  local s, n = tonumber(fields[i]), tonumber(fields[i + 1])
  if s < first then
    redis.call('HDEL', key, fields[i])
  elseif n > 0 then
    used = used + n
    if s == slot then inSlot = n end
    if oldest == nil or s < oldest then oldest = s end
  end
end
local granted = math.max(0, math.min(wanted, count - used, perSlot - inSlot))
if granted > 0 then
  redis.call('HINCRBY', key, slot, granted)
  if oldest == nil or slot < oldest then oldest = slot end
  redis.call('PEXPIRE', key, 2 * perMs + 1000) -- outlives the window: an idle topic leaves nothing
end
local waitMs = -1
if granted < wanted then
  -- a full window frees room when its oldest slot leaves it (the current slot is then oldest +
  -- SLOTS + 1); a full slot, when the next slot begins
  local at = slot + 1
  if used + granted >= count and oldest ~= nil then at = oldest + SLOTS + 1 end
  waitMs = math.max(1, math.ceil(at * perMs / SLOTS) - now)
end
return { granted, slot, waitMs, now }
