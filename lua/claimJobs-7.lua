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
  ARGV[3] max running: claims stop when the running zset holds this many; '' with acks: as many as
          the acks ended (a claim in place of those attempts: the topic's running count stays put)
  ARGV[4] the topic's ttr ms, for jobs that set none
  ARGV[5] a random nonce, new for every call (the claim tokens are nonce.i)
  ARGV[6] byte budget of the records and bodies read
  ARGV[7] '1': strict, even the first id must fit the budget (a caller that already holds jobs
          claimed in this round); '0': the first id is always looked at
  ARGV[8] retention ms of a job cancelled, expired or acked here (see cancelNow in
          includes/cancel.lua, ackAttempts in includes/ack.lua)
  ARGV[9] '1': start the attempts claimed; '0': claim only (a handler starts them)
  ARGV[10..] triples, none or a few: id, attempt number, claim token of attempts of this topic and
          partition to end as done first, as lua/ackJobs-4.lua does (a handler that acks its last
          job and claims its next in one call): the slots they free count for the claim
  A paused topic (includes/flow.lua) claims nothing. While the partition holds prioritized ready
  jobs (includes/priority.lua: their count read with the pause mark, no command when it is 0), the
  claim takes those above 0 first, highest first, then the ready list, then those below 0: ids
  looked at in that order count against n and the budget alike.
  Returns { now, taken, skipped, more 0|1, drained 0|1, capped 0|1, expired, acked, { id, attempt, runAt, deadline, url, body or false, maxAttempts, claim }... }
  where taken counts the ids taken off the ready list, more = 1 when the budget stopped the
  claim before n ids, drained = 1 when the call left the ready list empty (it read fewer ids
  than it could take and took them all) or the topic is paused: a further claim now would find
  nothing (0: it may find more, or the call cannot tell), and capped = 1 when the running zset
  holds max running after the call: further claims wait for attempts to end (the handlers of
  this claim, as they finish, take the next); expired counts the jobs that expired here; acked is
  0 when ARGV names no ack, else the acks' codes, one per triple in order (includes/ack.lua).
  Mirrored by ClaimReply and ClaimedItem in lib/engine/scripts.ts.
]]
--- @include "clock"
--- @include "budget"
--- @include "claim"
--- @include "flow"
--- @include "lateness"
--- @include "priority"
--- @include "ack"
-- what the includes give that the call uses for each job, as locals (a table lookup fewer a use)
local COUNT_FIELD, PRIO_MARK, visitReady = Priority.COUNT_FIELD, Priority.PRIO_MARK, Claim.visitReady
local PENDING = Codes.PENDING
local H_STATE, H_KEY, H_ERROR, H_EXPIRES, decode = Job.H_STATE, Job.H_KEY, Job.H_ERROR, Job.H_EXPIRES, Job.decode
local delayedMember, bodySize, H_PRIORITY = Job.delayedMember, Job.bodySize, Job.H_PRIORITY
local cancelNow, expireNow = Cancel.cancelNow, Cancel.expireNow
local groupCancelError = GroupCancel.groupCancelError
local cancelledWithGroup, claimOne = Claim.cancelledWithGroup, Claim.claimOne
local clock, byteBudget, PAUSED_FIELD = Clock.clock, Budget.byteBudget, Flow.PAUSED_FIELD
local firsts, prioTaken, recordLateness = Priority.firsts, Priority.taken, Lateness.recordLateness
local ackAttempts = Ack.ackAttempts
local readyKey, runningKey, jobsKey, delayedKey = KEYS[1], KEYS[2], KEYS[3], KEYS[5]
local start = ARGV[9] == '1'
local now = clock(ARGV[1])
-- the acks first: the slots they free count for the claim (0: none asked for)
local acked = 0
if #ARGV >= 10 then acked = ackAttempts(jobsKey, KEYS[4], runningKey, KEYS[6], now, ARGV[8] + 0, ARGV, 10) end
local running = redis.call('ZCARD', runningKey)
-- (a numeric ARGV's + 0 parses it once; tonumber twice)
local maxRunning = running
if ARGV[3] ~= '' then
  maxRunning = ARGV[3] + 0
elseif acked ~= 0 then
  -- in place of the attempts the acks ended: their slots, and no more
  for i = 1, #acked do
    if acked[i] == Codes.OUTCOME.ACKED or acked[i] == Codes.OUTCOME.ACKED_NOTIFY then maxRunning = maxRunning + 1 end
  end
end
local n = ARGV[2] + 0
if maxRunning - running < n then n = maxRunning - running end
if n <= 0 then return { now, 0, 0, 0, 0, 1, 0, acked } end
-- LRANGE, then LTRIM of what was looked at: ids after the budget stay where they are
local ids = redis.call('LRANGE', readyKey, '0', string.format('%d', n - 1))
if #ids == 0 then return { now, 0, 0, 0, 1, 0, 0, acked } end
-- the pause mark and the count of prioritized ready ids (includes/priority.lua) read with the first record
local first = redis.call('HMGET', jobsKey, PAUSED_FIELD, COUNT_FIELD, ids[1])
if first[1] then return { now, 0, 0, 0, 1, 0, 0, acked } end

local result = { now, 0, 0, 0, 0, 0, 0, acked }
local late = start and {} or false
local ttrMs = ARGV[4] + 0
local count = first[2]
local taken = 0
-- the keys cancelNow and expireNow take (a job cancelled or expired here: rare), made at their first use
local k = false
if not count or count == '0' then
  -- no prioritized ready job: the ready list in order, the budget counted inline (Budget.byteBudget's
  -- rule: never before the first id, unless strict), a table and a closure fewer a call
  local budget, loose, used = ARGV[6] + 0, ARGV[7] ~= '1', 0
  for i = 1, #ids do
    local id = ids[i]
    local record
    if i == 1 then record = first[3] else record = redis.call('HGET', jobsKey, id) end
    local h, inline
    if record then h, inline = decode(record) end
    local live = h and h[H_STATE] == PENDING and not redis.call('ZSCORE', delayedKey, delayedMember(id, h[H_KEY], h[H_PRIORITY]))
    local mark = live and cancelledWithGroup(jobsKey, h)
    local size = record and #record or 0
    if live and not mark then size = size + bodySize(KEYS[4], id, inline) end
    if not ((i == 1 and loose) or used + size <= budget) then
      result[4] = 1
      break
    end
    used = used + size
    if mark then
      k = k or { jobs = jobsKey, bodies = KEYS[4], delayed = delayedKey, running = runningKey, done = KEYS[6] }
      h[H_ERROR] = groupCancelError(mark)
      cancelNow(k, id, h, inline, now, tonumber(ARGV[8]))
      result[3] = result[3] + 1
    elseif not live then
      result[3] = result[3] + 1
    elseif late and h[H_EXPIRES] and h[H_EXPIRES] <= now then
      k = k or { jobs = jobsKey, bodies = KEYS[4], delayed = delayedKey, running = runningKey, done = KEYS[6] }
      expireNow(k, id, h, inline, now, tonumber(ARGV[8]))
      result[3], result[7] = result[3] + 1, result[7] + 1
    else
      result[#result + 1] = claimOne(jobsKey, runningKey, id, h, inline, now, ttrMs, string.format('%s.%d', ARGV[5], i), late)
    end
    taken = i
  end
  redis.call('LTRIM', readyKey, string.format('%d', taken), '-1')
  if #ids < n and taken == #ids then result[5] = 1 end
else
  count = tonumber(count)
  -- prioritized ids above 0 first, then the ready list, then those below 0; the claim's state for
  -- Claim.visitReady (includes/claim.lua): one table a call, no closure
  k = { jobs = jobsKey, bodies = KEYS[4], delayed = delayedKey, running = runningKey, done = KEYS[6] }
  local c = { k = k, result = result, late = late, budget = byteBudget(tonumber(ARGV[6]), ARGV[7] == '1'), now = now,
    retention = tonumber(ARGV[8]), ttrMs = ttrMs, nonce = ARGV[5] }
  local stopped, listTaken, marked, gone = false, 0, false, {}
  local function fromZset(positive)
    if stopped or taken >= n then return end
    for _, id in ipairs(firsts(jobsKey, positive, n - taken)) do
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
  if listTaken > 0 then redis.call('LTRIM', readyKey, string.format('%d', listTaken), '-1') end
  prioTaken(jobsKey, readyKey, gone, count, marked)
  if not stopped and result[4] == 0 and taken < n and #ids < n then result[5] = 1 end
end
if running + #result - 8 >= maxRunning then result[6] = 1 end -- claims made: the items after the 8 header slots
if late and #late > 0 then recordLateness(KEYS[7], now, late) end
result[2] = taken
return result
