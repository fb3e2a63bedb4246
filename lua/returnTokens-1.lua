--[[
  Gives back start tokens a claim took (lua/takeTokens-1.lua) but did not use: fewer jobs were
  ready, the topic's concurrency was reached, or the byte budget stopped the claim. They leave
  both the window's slot and the pace, as if never taken.
  KEYS[1] the topic's rate hash (dq:{rate}:<topic>)
  ARGV[1] the slot the tokens were granted in  ARGV[2] how many to give back
  ARGV[3] the pace's interval, perMs / count
  Returns the starts the slot holds after the call (0 when it had left the window already).
]]
local key, slot, n, interval = KEYS[1], ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3])
local tat = tonumber(redis.call('HGET', key, 'tat'))
if tat then redis.call('HSET', key, 'tat', tostring(tat - n * interval)) end
local held = tonumber(redis.call('HGET', key, slot))
if not held then return 0 end
local left = math.max(0, held - n)
if left == 0 then redis.call('HDEL', key, slot) else redis.call('HSET', key, slot, left) end
return left
