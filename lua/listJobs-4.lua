--[[
  Lists the jobs of a zset of one topic and partition (delayed: by due time; running: by TTR
  deadline; dead: by time of death) after a cursor and up to a score, in the zset's own order: by
  score, then by id (bytewise), so jobs with the same score still have a place to resume from.
  Replies a body only when it is inline: the caller reads the bodies kept apart with a plain HMGET
  of the bodies hash (moving a large body through a script costs Redis about ten times a plain
  read: BENCHMARKS.md, step 7). Stops before the job whose record and body would pass the byte
  budget (never before the first), so the bodies the caller then reads stay within it too.
  KEYS[1] the zset  KEYS[2] jobs hash  KEYS[3] bodies hash  KEYS[4] delayed zset (for the views'
          state)
  ARGV[1] the cursor's score (ms), or '-inf' for the first page
  ARGV[2] the cursor's job id: lists what sorts after (score, id); '' lists only jobs scored
          after the score (a listing from a time on)
  ARGV[3] limit  ARGV[4] byte budget of the records and bodies read
  ARGV[5] highest score listed, or '+inf'
  Returns { more 0|1, { score, view }... } (views as in includes/job.lua; a body kept apart is
  false),
  where more = 1 when the budget stopped the page before the limit: entries after the last one
  listed were not looked at.
  Mirrored by ListJobsReply and ScoredEntry in lib/engine/scripts.ts.
]]
--- @include "budget"
--- @include "job"
local zsetKey, jobsKey, bodiesKey, delayedKey = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local cursorTime, cursorId, limit, maxScore = ARGV[1], ARGV[2], tonumber(ARGV[3]), ARGV[5]
local budget = Budget.byteBudget(tonumber(ARGV[4]))

-- Lua's string < follows the server's locale (Redis sets LC_COLLATE); a zset orders members bytewise
local function bytewiseAfter(a, b)
  for i = 1, math.min(#a, #b) do
    local x, y = string.byte(a, i), string.byte(b, i)
    if x ~= y then return x > y end
  end
  return #a > #b
end

-- rank of the first entry after the cursor
local function startRank()
  if cursorTime == '-inf' then return 0 end
  if cursorId == '' then return redis.call('ZCOUNT', zsetKey, '-inf', cursorTime) end
  local score = redis.call('ZSCORE', zsetKey, cursorId)
  if score and tonumber(score) == tonumber(cursorTime) then return redis.call('ZRANK', zsetKey, cursorId) + 1 end
  -- the cursor's job has left (redriven, purged), or its member holds a flow key: binary search
  -- among the jobs of that score, which hold consecutive ranks ordered by id: log2(ties)
  -- single-entry ZRANGEs
  local lo = redis.call('ZCOUNT', zsetKey, '-inf', '(' .. cursorTime)
  local hi = lo + redis.call('ZCOUNT', zsetKey, cursorTime, cursorTime)
  while lo < hi do
    local mid = math.floor((lo + hi) / 2)
    if bytewiseAfter((Job.memberParts(redis.call('ZRANGE', zsetKey, mid, mid)[1])), cursorId) then hi = mid else lo = mid + 1 end
  end
  return lo
end

local start = startRank()
local entries = redis.call('ZRANGE', zsetKey, start, start + limit - 1, 'WITHSCORES')
local result = { 0 }
for i = 1, #entries, 2 do
  -- a delayed member may hold a flow key after the id (delayedMember in includes/job.lua)
  local id = Job.memberParts(entries[i])
  if maxScore ~= '+inf' and tonumber(entries[i + 1]) > tonumber(maxScore) then break end
  local record = redis.call('HGET', jobsKey, id)
  if record then
    local h, inline = Job.decode(record)
    if not Job.fitsListing(budget, bodiesKey, id, record, inline) then
      result[1] = 1
      break
    end
    result[#result + 1] = { tonumber(entries[i + 1]), Job.view(jobsKey, delayedKey, id, h, inline) }
  end
end
return result
