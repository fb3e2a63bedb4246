--[[
  The head of a zset: by the delayed zset's, a script tells whether a change made a job the earliest
  due of its topic (the caller then wakes the sweeper, lua/wakeSweeper-4.lua).
]]
local Head = {}
do
  -- Score of the zset's first member, or false when it is empty. (Every argument a string: a number
  -- passed to redis.call costs a '%.17g' format, about 2,300 instructions.)
  local function headScore(key)
    local head = redis.call('ZRANGE', key, '0', '0', 'WITHSCORES')
    if head[2] then return head[2] + 0 end -- (+ 0 parses once; tonumber twice)
    return false
  end

  Head.headScore = headScore
end
