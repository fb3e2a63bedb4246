--[[
  Claims up to n ready jobs of one topic and partition for an attempt each: counts the attempt
  and puts the job in the running zset with its TTR deadline. Each claim gets a token no other
  claim has (ARGV[5] and its place in this call): ack, fail, start and release present it. Ids
  whose job is gone, cancelled, rescheduled or already claimed are taken off the list and skipped,
  never searched for. Rewrites each claimed record's header only, and replies a body only when it
  is inline: the caller reads the bodies kept apart with a plain HMGET of the bodies hash (moving a
  large body through a script costs Redis about ten times a plain read: BENCHMARKS.md, step 7).
  Stops before the job whose record and body would pass the byte budget (never before the first
  id, unless strict): the ids not looked at stay at the head of the ready list, and the bodies the
  caller then reads stay within the budget too.
  With ARGV[9] '1' the claim also starts each attempt, as startAttempts-5 does (for a handler
  that runs what it claims at once): the attempt is marked started and its lateness recorded in
  the partition's stats (KEYS[7]); a job whose expiry (H_EXPIRES) is at or before now is not
  claimed but ends as EXPIRED (expireNow in includes/cancel.lua), counted as skipped and expired.
  A job whose group is being cancelled (lua/cancelGroup-6.lua) and that has not changed since that
  cancel began is cancelled here instead of claimed (and counted as skipped): the cancel may not
  have reached it yet, and it must not start.
  KEYS[1] ready list  KEYS[2] running zset  KEYS[3] jobs hash  KEYS[4] bodies hash
  KEYS[5] delayed zset  KEYS[6] done zset  KEYS[7] the topic's lateness stats hash
  ARGV[1] fixed clock ms or ''  ARGV[2] n, at most this many ids are taken
  ARGV[3] max running: claims stop when the running zset holds this many
  ARGV[4] the topic's ttr ms, for jobs that set none
  ARGV[5] a random nonce, new for every call (the claim tokens are nonce.i)
  ARGV[6] byte budget of the records and bodies read
  ARGV[7] '1': strict, even the first id must fit the budget (a caller that already holds jobs
          claimed in this round); '0': the first id is always looked at
  ARGV[8] retention ms of a job cancelled here (see cancelNow in includes/cancel.lua)
  ARGV[9] '1': start the attempts claimed; '0': claim only (a handler starts them)
  A paused topic (includes/flow.lua) claims nothing. While the partition holds prioritized ready
  jobs (includes/priority.lua: their count read with the pause mark, no command when it is 0), the
  claim takes those above 0 first, highest first, then the ready list, then those below 0: ids
  looked at in that order count against n and the budget alike.
  Returns { now, taken, skipped, more 0|1, drained 0|1, capped 0|1, expired, { id, attempt, runAt, deadline, url, body or false, maxAttempts, claim }... }
  where taken counts the ids taken off the ready list, more = 1 when the budget stopped the
  claim before n ids, drained = 1 when the call left the ready list empty (it read fewer ids
  than it could take and took them all) or the topic is paused: a further claim now would find
  nothing (0: it may find more, or the call cannot tell), and capped = 1 when the running zset
  holds max running after the call: further claims wait for attempts to end (the handlers of
  this claim, as they finish, take the next); expired counts the jobs that expired here. Mirrored by ClaimReply and ClaimedItem in
  lib/engine/scripts.ts.
]]
--- @include "clock"
--- @include "budget"
--- @include "claim"
--- @include "flow"
--- @include "lateness"
--- @include "priority"
-- what the includes give that the call uses for each job, as locals (a table lookup fewer a use)
local COUNT_FIELD, PRIO_MARK, visitReady = Priority.COUNT_FIELD, Priority.PRIO_MARK, Claim.visitReady
local readyKey, runningKey, jobsKey, bodiesKey, delayedKey = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local k = { jobs = jobsKey, bodies = bodiesKey, delayed = delayedKey, running = runningKey, done = KEYS[6] }
local retention, ttrMs = tonumber(ARGV[8]), tonumber(ARGV[4])
local start = ARGV[9] == '1'
local now = Clock.clock(ARGV[1])
local budget = Budget.byteBudget(tonumber(ARGV[6]), ARGV[7] == '1')
local maxRunning = tonumber(ARGV[3])
local running = redis.call('ZCARD', runningKey)
local n = math.min(tonumber(ARGV[2]), maxRunning - running)
if n <= 0 then return { now, 0, 0, 0, 0, 1, 0 } end
-- LRANGE, then LTRIM of what was looked at: ids after the budget stay where they are
local ids = redis.call('LRANGE', readyKey, 0, n - 1)
if #ids == 0 then return { now, 0, 0, 0, 1, 0, 0 } end
-- the pause mark and the count of prioritized ready ids (includes/priority.lua) read with the first record
local first = redis.call('HMGET', jobsKey, Flow.PAUSED_FIELD, COUNT_FIELD, ids[1])
if first[1] then return { now, 0, 0, 0, 1, 0, 0 } end

local result = { now, 0, 0, 0, 0, 0, 0 }
local late = {}
-- the claim's state for Claim.visitReady (includes/claim.lua): one table a call, no closure
local c = { k = k, result = result, late = start and late, budget = budget, now = now, retention = retention,
  ttrMs = ttrMs, nonce = ARGV[5] }

local count = tonumber(first[2] or 0)
local taken = 0
if count == 0 then
  for i, id in ipairs(ids) do
    local record
    if i == 1 then record = first[3] else record = redis.call('HGET', jobsKey, id) end
    if not visitReady(c, id, record, i) then break end
    taken = i
  end
  redis.call('LTRIM', readyKey, taken, -1)
  if #ids < n and taken == #ids then result[5] = 1 end
else
  -- prioritized ids above 0 first, then the ready list, then those below 0
  local stopped, listTaken, marked, gone = false, 0, false, {}
  local function fromZset(positive)
    if stopped or taken >= n then return end
    for _, id in ipairs(Priority.firsts(jobsKey, positive, n - taken)) do
      if not visitReady(c, id, redis.call('HGET', jobsKey, id), taken + 1, true) then
        stopped = true
        return
      end
      taken = taken + 1
      gone[#gone + 1] = id
    end
  end
  fromZset(true)
  for i, id in ipairs(ids) do
    if stopped then break end
    if id == PRIO_MARK then
      marked = true
    elseif taken >= n then
      break
    else
      local record
      if i == 1 then record = first[3] else record = redis.call('HGET', jobsKey, id) end
      if not visitReady(c, id, record, taken + 1, false) then
        stopped = true
        break
      end
      taken = taken + 1
    end
    listTaken = i
  end
  -- those below 0 only once the ready list is read to its end (the mark took a place in the read)
  if listTaken == #ids and #ids < n then fromZset(false) end
  if listTaken > 0 then redis.call('LTRIM', readyKey, listTaken, -1) end
  Priority.taken(jobsKey, readyKey, gone, count, marked)
  if not stopped and result[4] == 0 and taken < n and #ids < n then result[5] = 1 end
end
if running + #result - 7 >= maxRunning then result[6] = 1 end -- claims made: the items after the 7 header slots
if #late > 0 then Lateness.recordLateness(KEYS[7], now, late) end
result[2] = taken
return result
