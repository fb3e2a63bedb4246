--[[
  Lists a group's jobs in one topic and partition, in the order they joined it, after a cursor.
  Members that left the group (purged, or moved by a put) are passed over. Replies a body only
  when it is inline: the caller reads the bodies kept apart with a plain HMGET of the bodies hash.
  Stops before the job whose record and body would pass the byte budget (never before the first).
  KEYS[1] group zset  KEYS[2] jobs hash  KEYS[3] bodies hash  KEYS[4] delayed zset
  ARGV[1] the group  ARGV[2] cursor: score of the last member looked at, '-inf' for the first page
  ARGV[3] limit (members looked at)  ARGV[4] byte budget of the records and bodies read
  Returns { more 0|1, cursor, view... } where more = 1 when members may be left after the cursor
  (the limit or the budget stopped the page), and cursor is the score of the last member looked
  at (views as in includes/job.lua; a body kept apart is false).
  Mirrored by ListGroupReply in lib/engine/scripts.ts.
]]
local groupKey, jobsKey, bodiesKey, delayedKey = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local group, cursor, limit = ARGV[1], ARGV[2], tonumber(ARGV[3])
local budget = byteBudget(tonumber(ARGV[4]))
local members = redis.call('ZRANGEBYSCORE', groupKey, '(' .. cursor, '+inf', 'WITHSCORES', 'LIMIT', 0, limit)
local result = { 0, cursor }
if #members == 2 * limit then result[1] = 1 end
for i = 1, #members, 2 do
  local id = members[i]
  local record = redis.call('HGET', jobsKey, id)
  local h, inline
  if record then h, inline = decode(record) end
  if h and h[H_GROUP] == group then
    if not fitsListing(budget, bodiesKey, id, record, inline) then
      result[1] = 1
      break
    end
    result[#result + 1] = view(delayedKey, id, h, inline)
  end
  result[2] = members[i + 1]
end
return result
