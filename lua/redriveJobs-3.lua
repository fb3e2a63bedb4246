--[[
  Moves dead jobs back to delayed, due now, with their attempts reset to 0 (the last error is
  kept until the next attempt ends).
  KEYS[1] dead zset  KEYS[2] delayed zset  KEYS[3] jobs hash
  ARGV[1] fixed clock ms or ''  ARGV[2] n: redrive the n oldest dead jobs, when no ids follow
  ARGV[3..] ids to redrive (ids that are not dead are skipped)
  Returns { redriven, headChanged 0|1 }
  Mirrored by RedriveReply in lib/engine/scripts.ts.
]]
local deadKey, delayedKey, jobsKey = KEYS[1], KEYS[2], KEYS[3]
local now = clock(ARGV[1])
local ids = {}
if #ARGV > 2 then
  for i = 3, #ARGV do
    if redis.call('ZSCORE', deadKey, ARGV[i]) then ids[#ids + 1] = ARGV[i] end
  end
else
  ids = redis.call('ZRANGE', deadKey, 0, tonumber(ARGV[2]) - 1)
end
if #ids == 0 then return { 0, 0 } end

local headBefore = headScore(delayedKey)
local redriven = 0
for _, id in ipairs(ids) do
  redis.call('ZREM', deadKey, id)
  local record = redis.call('HGET', jobsKey, id)
  if record then
    local h, body = decode(record)
    h[H_STATE], h[H_ATTEMPTS], h[H_RUN_AT], h[H_UPDATED] = PENDING, 0, now, now
    redis.call('HSET', jobsKey, id, encode(h, body))
    redis.call('ZADD', delayedKey, now, id)
    redriven = redriven + 1
  end
end
local headChanged = 0
if redriven > 0 and (not headBefore or now < headBefore) then headChanged = 1 end
return { redriven, headChanged }
