--[[
  One step of cancelling a group's jobs in one topic and partition. The first step marks the
  group as being cancelled at a new version (the mark): from then on, a claim cancels instead of
  starting any job of the group that has not changed since (lua/claimJobs-6.lua). Each step then
  cancels, in the order they joined, up to `limit` jobs of the group that joined at or before the
  mark (delayed, ready and running ones; a running attempt keeps running, but its ack is dropped
  and no retry follows), and takes out of the zset the members that left the group. The step that
  reaches the end clears the mark (unless a newer cancel replaced it). Jobs that join after the
  mark are not looked at: they run.
  KEYS[1] jobs hash  KEYS[2] bodies hash  KEYS[3] delayed zset  KEYS[4] running zset
  KEYS[5] done zset  KEYS[6] group zset
  ARGV[1] fixed clock ms or ''  ARGV[2] the group  ARGV[3] the mark, '' for the first step
  ARGV[4] cursor: the score of the last member looked at, '-inf' for the first step
  ARGV[5] limit (members looked at; 0 only marks the group)  ARGV[6] byte budget of the records read
  ARGV[7] retention ms of a cancelled job (see cancelNow in includes/job.lua)
  Returns { cancelled, running, done 0|1, cursor, mark } where cancelled counts the delayed and
  ready jobs this step cancelled (and those a claim cancelled for this mark), running the running
  ones, and done = 1 when no member at or before the mark is left after the cursor.
  Mirrored by CancelGroupReply in lib/engine/scripts.ts.
]]
local k = { jobs = KEYS[1], bodies = KEYS[2], delayed = KEYS[3], running = KEYS[4], done = KEYS[5] }
local groupKey = KEYS[6]
local now, group, mark, cursor = clock(ARGV[1]), ARGV[2], ARGV[3], ARGV[4]
local limit, budget, retention = tonumber(ARGV[5]), byteBudget(tonumber(ARGV[6])), tonumber(ARGV[7])
local markField = GROUP_CANCEL_FIELD .. group

if mark == '' then
  mark = tostring(nextVersion(k.jobs))
  redis.call('HSET', k.jobs, markField, mark)
end

if limit == 0 then return { 0, 0, 0, cursor, mark } end
local members = redis.call('ZRANGEBYSCORE', groupKey, '(' .. cursor, mark, 'WITHSCORES', 'LIMIT', 0, limit)
local cancelled, running, stopped = 0, 0, false
local claimError = groupCancelError(mark)
for i = 1, #members, 2 do
  local id = members[i]
  local record = redis.call('HGET', k.jobs, id)
  local h, inline
  if record then h, inline = decode(record) end
  if not h or h[H_GROUP] ~= group then
    redis.call('ZREM', groupKey, id)
  else
    if not budget.fits(#record) then
      stopped = true
      break
    end
    budget.spend(#record)
    local state = h[H_STATE]
    if state == PENDING then
      cancelNow(k, id, h, inline, now, retention)
      cancelled = cancelled + 1
    elseif state == RUNNING then
      cancelNow(k, id, h, inline, now, retention)
      running = running + 1
    elseif state == CANCELLED and h[H_ERROR] == claimError then
      cancelled = cancelled + 1
    end
  end
  cursor = members[i + 1]
end

local done = 0
if not stopped and #members < 2 * limit then
  done = 1
  if redis.call('HGET', k.jobs, markField) == mark then redis.call('HDEL', k.jobs, markField) end
end
return { cancelled, running, done, cursor, mark }
