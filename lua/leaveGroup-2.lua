--[[
  Takes jobs out of a group's zset when they are no longer in the group: their record is gone
  (purged) or names another group (moved by a put) or none. A job still in the group stays.
  KEYS[1] jobs hash  KEYS[2] group zset
  ARGV[1] the group  ARGV[2..] ids (at most the caller's batch, a few hundred)
  Returns how many ids left the zset.
]]
local jobsKey, groupKey, group = KEYS[1], KEYS[2], ARGV[1]
local removed = 0
for i = 2, #ARGV do
  local id = ARGV[i]
  local record = redis.call('HGET', jobsKey, id)
  if not record or decode(record)[H_GROUP] ~= group then
    removed = removed + redis.call('ZREM', groupKey, id)
  end
end
return removed
