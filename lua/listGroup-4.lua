--[[
  Lists a group's jobs in one topic and partition, in the order they joined it (the group's zsets
  in turn, see "Groups" in includes/groups.lua), after a cursor. Members that left the group
  (purged, or moved by a put) are passed over. Replies a body only when it is inline: the caller reads the
  bodies kept apart with a plain HMGET of the bodies hash. Stops before the job whose record and
  body would pass the byte budget (never before the first).
  KEYS[1] the group's key (its first zset; the others' names derive from it)  KEYS[2] jobs hash
  KEYS[3] bodies hash  KEYS[4] delayed zset
  ARGV[1] the group  ARGV[2] the zset (chunk) to start in, '' for the first page: the oldest
  ARGV[3] cursor in it: score of the last member looked at, '-inf' for its first
  ARGV[4] limit (members looked at, an empty zset counting as one)
  ARGV[5] byte budget of the records and bodies read
  Returns { more 0|1, chunk, cursor, view... } where more = 1 when members may be left after the
  cursor (the limit or the budget stopped the page), and chunk and cursor are where the next page
  starts (views as in includes/job.lua; a body kept apart is false).
  Mirrored by ListGroupReply in lib/engine/scripts.ts.
]]
--- @include "budget"
--- @include "job"
--- @include "groups"
local groupKey, jobsKey, bodiesKey, delayedKey = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local group, chunk, cursor, limit = ARGV[1], tonumber(ARGV[2]), ARGV[3], tonumber(ARGV[4])
local budget = Budget.byteBudget(tonumber(ARGV[5]))
local low, cur = Groups.groupChunks(jobsKey, group)
-- the zsets before the oldest are empty
if not chunk or chunk < low then chunk, cursor = low, '-inf' end
local result = { 0, chunk, cursor }
local left, stopped = limit, false
while chunk <= cur and not stopped do
  if left <= 0 then
    result[1] = 1
    break
  end
  local members = Groups.chunkMembers(jobsKey, groupKey, group, chunk, cursor, left)
  for i = 1, #members, 2 do
    local id = members[i]
    local record = redis.call('HGET', jobsKey, id)
    local h, inline
    if record then h, inline = Job.decode(record) end
    if Groups.inChunk(h, group, chunk) then
      if not Job.fitsListing(budget, bodiesKey, id, record, inline) then
        result[1], stopped = 1, true
        break
      end
      result[#result + 1] = Job.view(jobsKey, delayedKey, id, h, inline)
    end
    cursor = members[i + 1]
  end
  if not stopped then
    local n = #members / 2
    if n < left then chunk, cursor = chunk + 1, '-inf' end
    left = left - math.max(n, 1)
  end
end
result[2], result[3] = chunk, cursor
return result
