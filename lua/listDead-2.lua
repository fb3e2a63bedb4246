--[[
  Lists dead jobs, oldest first, after a cursor.
  KEYS[1] dead zset  KEYS[2] jobs hash
  ARGV[1] exclusive lower bound on the time the job died (ms), or '-inf'  ARGV[2] limit
  Returns { { diedAt, view }... } (views as in includes/job.lua, with the dead state)
  Mirrored by DeadEntry in lib/engine/scripts.ts.
]]
local deadKey, jobsKey = KEYS[1], KEYS[2]
local min = ARGV[1]
if min ~= '-inf' then min = '(' .. min end
local entries = redis.call('ZRANGEBYSCORE', deadKey, min, '+inf', 'WITHSCORES', 'LIMIT', 0, tonumber(ARGV[2]))
local result = {}
for i = 1, #entries, 2 do
  local id = entries[i]
  local record = redis.call('HGET', jobsKey, id)
  if record then
    local h, body = decode(record)
    -- dead jobs are never in the delayed zset, so view() needs no real delayed key here
    result[#result + 1] = { tonumber(entries[i + 1]), view(deadKey, id, h, body) }
  end
end
return result
