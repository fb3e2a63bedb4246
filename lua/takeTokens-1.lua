--[[
  Takes up to n start tokens of a topic's rate limit (count starts per perMs), shared by every
  fan-out and handler that claims. The window of perMs is cut into SLOTS slots; a field per slot
  holds the starts granted in it. A grant is allowed while the slots of the last perMs, and the
  one before them, hold fewer than count: any span of perMs then holds at most count starts
  (conservative by one slot, 1 % of the window). Fields of older slots are deleted as seen, so the
  hash holds at most SLOTS + 2 fields: constant work per call.
  KEYS[1] the topic's rate hash (dq:{rate}:<topic>)
  ARGV[1] fixed clock ms or ''  ARGV[2] count  ARGV[3] perMs  ARGV[4] n, tokens wanted (>= 1)
  Returns { granted, slot, waitMs, now }: granted <= n; slot to name when giving unused tokens
  back (lua/returnTokens-1.lua); waitMs until the oldest slot holding starts leaves the window
  (when granted < n), else -1.
]]
local SLOTS = 100 -- slots per window: a grant waits at most one slot longer than an exact window
local key = KEYS[1]
local now = clock(ARGV[1])
local count, perMs, wanted = tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
local slot = math.floor(now * SLOTS / perMs)
local first = slot - SLOTS
local used, oldest = 0, nil
local fields = redis.call('HGETALL', key)
for i = 1, #fields, 2 do
  local s, n = tonumber(fields[i]), tonumber(fields[i + 1])
  if s < first then
    redis.call('HDEL', key, fields[i])
  elseif n > 0 then
    used = used + n
    if oldest == nil or s < oldest then oldest = s end
  end
end
local granted = math.max(0, math.min(wanted, count - used))
if granted > 0 then
  redis.call('HINCRBY', key, slot, granted)
  if oldest == nil or slot < oldest then oldest = slot end
  redis.call('PEXPIRE', key, 2 * perMs + 1000) -- outlives the window: an idle topic leaves nothing
end
local waitMs = -1
if granted < wanted and oldest ~= nil then
  -- the oldest slot leaves the window when the current slot is oldest + SLOTS + 1
  waitMs = math.max(1, math.ceil((oldest + SLOTS + 1) * perMs / SLOTS) - now)
end
return { granted, slot, waitMs, now }
