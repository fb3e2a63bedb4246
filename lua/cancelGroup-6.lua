--[[
  One step of cancelling a group's jobs in one topic and partition. The first step marks the
  group as being cancelled at a new version (the mark): from then on, a claim cancels instead of
  starting any job of the group that has not changed since (lua/claimJobs-6.lua). Each step then
  cancels, in the order they joined (the group's zsets in turn, see "Groups" in
  includes/groups.lua), up to `limit` jobs of the group that joined before the mark, which are the members of its
  chunks up to the newest at the mark (delayed, ready and running
  ones; a running attempt keeps running, but its ack is dropped and no retry follows), and takes
  out of the zsets the members that left the group. The step that reaches the end clears the mark
  (unless a newer cancel replaced it). Jobs that join after the mark are not looked at: they run.
  KEYS[1] jobs hash  KEYS[2] bodies hash  KEYS[3] delayed zset  KEYS[4] running zset
  KEYS[5] done zset  KEYS[6] the group's key (its first zset; the others' names derive from it)
  ARGV[1] fixed clock ms or ''  ARGV[2] the group  ARGV[3] the mark, '' for the first step
  ARGV[4] the zset (chunk) the step starts in, '' for the first step: the group's oldest
  ARGV[5] cursor in it: the score of the last member looked at, '-inf' for its first
  ARGV[6] the last chunk to look at, '' for the first step: the newest at the mark, which the
          mark closes (see closeChunks in includes/groups.lua: later jobs join later chunks)
  ARGV[7] limit: members looked at, an empty zset counting as one (0 only marks the group)
  ARGV[8] byte budget of the records read  ARGV[9] retention ms of a cancelled job (see cancelNow)
  ARGV[10] the name of the API key that cancels the group, or '' (each job's updatedBy)
  Returns { cancelled, running, done 0|1, chunk, cursor, mark, last } where cancelled counts the
  delayed and ready jobs this step cancelled (and those a claim cancelled for this mark), running
  the running ones, done = 1 when no member that joined before the mark is left after the cursor,
  and chunk, cursor, mark and last are what the next step passes.
  Mirrored by CancelGroupReply in lib/engine/scripts.ts.
]]
--- @include "codes"
--- @include "clock"
--- @include "budget"
--- @include "job"
--- @include "cancel"
--- @include "groupCancel"
--- @include "groups"
local k = { jobs = KEYS[1], bodies = KEYS[2], delayed = KEYS[3], running = KEYS[4], done = KEYS[5] }
local groupKey = KEYS[6]
local now, group, mark = Clock.clock(ARGV[1]), ARGV[2], ARGV[3]
local chunk, cursor, last = tonumber(ARGV[4]), ARGV[5], tonumber(ARGV[6])
local limit, budget, retention = tonumber(ARGV[7]), Budget.byteBudget(tonumber(ARGV[8])), tonumber(ARGV[9])
local by = ARGV[10]
if by == '' then by = nil end
local markField = GroupCancel.GROUP_CANCEL_FIELD .. group

if mark == '' then
  mark = string.format('%d', Job.nextVersion(k.jobs))
  redis.call('HSET', k.jobs, markField, mark)
end
if not chunk or not last then
  local low, cur = Groups.groupChunks(k.jobs, group)
  chunk = chunk or low
  if not last then last = Groups.closeChunks(k.jobs, groupKey, group, low, cur) end
end
if limit == 0 then return { 0, 0, 0, chunk, cursor, mark, last } end

local cancelled, running, stopped, tidy = 0, 0, false, false
local claimError = GroupCancel.groupCancelError(mark)
local left = limit
while left > 0 and chunk <= last do
  local members = Groups.chunkMembers(k.jobs, groupKey, group, chunk, cursor, left)
  for i = 1, #members, 2 do
    local id = members[i]
    local record = redis.call('HGET', k.jobs, id)
    local h, inline
    if record then h, inline = Job.decode(record) end
    if not Groups.inChunk(h, group, chunk) then
      Groups.leaveChunk(k.jobs, groupKey, group, chunk, id)
      tidy = true
    else
      if not budget.take(#record) then
        stopped = true
        break
      end
      local state = h[Job.H_STATE]
      if state == Codes.PENDING then
        Cancel.cancelNow(k, id, h, inline, now, retention, by)
        cancelled = cancelled + 1
      elseif state == Codes.RUNNING then
        Cancel.cancelNow(k, id, h, inline, now, retention, by)
        running = running + 1
      elseif state == Codes.CANCELLED and h[Job.H_ERROR] == claimError then
        cancelled = cancelled + 1
      end
    end
    cursor = members[i + 1]
  end
  if stopped then break end
  local n = #members / 2
  -- fewer than asked for: this zset holds no more members
  if n < left then chunk, cursor = chunk + 1, '-inf' end
  left = left - math.max(n, 1)
end
if tidy then Groups.tidyGroup(k.jobs, groupKey, group) end

local done = 0
if chunk > last then
  done = 1
  if redis.call('HGET', k.jobs, markField) == mark then
    redis.call('HDEL', k.jobs, markField)
    Groups.tidyGroup(k.jobs, groupKey, group)
  end
end
return { cancelled, running, done, chunk, cursor, mark, last }
