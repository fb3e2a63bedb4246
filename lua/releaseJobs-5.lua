--[[
  Gives claimed jobs back without counting their attempt (the handler was never invoked): each
  goes to the front of its ready list.
  KEYS[1] jobs hash  KEYS[2] running zset  KEYS[3] ready list
  ARGV[1] fixed clock ms or ''  ARGV[2..] pairs: id, attempt number that was claimed
  Returns the number released; an id not running with that attempt is left as it is.
  Mirrored by releaseJobs in lib/engine/scripts.ts.
]]
local jobsKey, runningKey, readyKey = KEYS[1], KEYS[2], KEYS[3]
local now = clock(ARGV[1])
local released = 0
for i = 2, #ARGV, 2 do
  local id = ARGV[i]
  local record = redis.call('HGET', jobsKey, id)
  if record then
    local h, body = decode(record)
    if h[H_STATE] == RUNNING and h[H_ATTEMPTS] == tonumber(ARGV[i + 1]) then
      h[H_STATE], h[H_ATTEMPTS], h[H_UPDATED], h[H_DEADLINE] = PENDING, h[H_ATTEMPTS] - 1, now, false
      redis.call('HSET', jobsKey, id, encode(h, body))
      redis.call('ZREM', runningKey, id)
      redis.call('LPUSH', readyKey, id)
      released = released + 1
    end
  end
end
return released
