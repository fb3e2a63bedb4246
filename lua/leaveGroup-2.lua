--[[
  Takes jobs out of a group's zsets (or its bucket, for a small group's first chunk) when they are
  no longer in the group: their record is gone (purged), names another group (moved by a put) or
  none, or places the job in another of the group's zsets (it joined again since). A job still in the group stays. When zsets are left
  empty, the group's range moves on (tidyGroup in includes/groups.lua): an emptied group leaves no key.
  KEYS[1] jobs hash  KEYS[2] the group's key (its first zset; the others' names derive from it)
  ARGV[1] the group  ARGV[2..] id, chunk, id, chunk, ... (the chunk the job was in; at most the
  caller's batch, a few hundred jobs)
  Returns how many ids left a zset.
]]
--- @include "job"
--- @include "groups"
local jobsKey, groupKey, group = KEYS[1], KEYS[2], ARGV[1]
local removed = 0
for i = 2, #ARGV, 2 do
  local id, chunk = ARGV[i], tonumber(ARGV[i + 1])
  local record = redis.call('HGET', jobsKey, id)
  local h
  if record then h = Job.decode(record) end
  if not Groups.inChunk(h, group, chunk) then removed = removed + Groups.leaveChunk(jobsKey, groupKey, group, chunk, id) end
end
if removed > 0 then Groups.tidyGroup(jobsKey, groupKey, group) end
return removed
