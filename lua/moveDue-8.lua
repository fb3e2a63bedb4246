--[[
  One sweep step for one topic and partition, each part bounded by the limit, and the parts that
  read records (1 and 3) together by the byte budget:
  1. running attempts past their TTR deadline become failed attempts (retry or dead); one that
     no handler started is given back without counting (see giveBack in includes/attempts.lua);
     each rewrites the record's header only;
  2. due jobs move from the delayed zset to the ready list, oldest due first (no record is read);
     one with a priority (read off its member) to the prioritized zset (includes/priority.lua);
  3. done and cancelled jobs past their retention, and dead jobs older than the dead retention,
     are deleted, record and body; the reply names those that had a group, so that the caller
     takes them out of their groups' zsets (lua/leaveGroup-2.lua; their keys are not this call's).
  KEYS[1] delayed zset  KEYS[2] ready list  KEYS[3] running zset  KEYS[4] jobs hash
  KEYS[5] bodies hash  KEYS[6] dead zset  KEYS[7] done zset
  KEYS[8] the topic's schedule-next zset of the partition (only read: its head)
  ARGV[1] fixed clock ms or ''  ARGV[2] limit per part  ARGV[3] the topic's max attempts
  ARGV[4] the topic's backoff spec  ARGV[5] random number in [0, 1) for jitter
  ARGV[6] dead retention ms  ARGV[7] byte budget of the records read (parts 1 and 3)
  ARGV[8] '1': a flow topic (includes/flow.lua): due jobs go to their keys' lanes (each key read
          off the job's delayed member, no record read), and keys whose pace held them go back in
          the ring; '0': not
  Returns { moved, retried, deadLettered, purged, more 0|1, nextAt ms or nil, now, ready, givenBack,
            { group, id, chunk, group, id, chunk, ... } of the purged jobs that had a group,
            schedulesAt ms or false }
  where more = 1 when a part hit its limit or the budget (call again now), nextAt is the earliest
  of the next due job, the next TTR deadline and (flow) the next key its pace lets go, ready is the
  ready list's length after the move and the give-backs (flow: the keys in the ring; 0 while the
  topic is paused), givenBack counts the attempts given back without counting, and schedulesAt is
  when the partition's earliest schedule of the topic needs moving on (its pending occurrence's run
  time; false: none), so the sweep reads the due schedules (lua/dueSchedules-2.lua) only when some are.
  Mirrored by MoveDueReply in lib/engine/scripts.ts.
]]
--- @include "codes"
--- @include "clock"
--- @include "budget"
--- @include "head"
--- @include "job"
--- @include "attempts"
--- @include "flow"
--- @include "priority"
-- what the includes give that the call uses for each job, as locals (a table lookup fewer a use)
local RUNNING = Codes.RUNNING
local H_STATE, H_ATTEMPTS, H_STARTED, H_GROUP = Job.H_STATE, Job.H_ATTEMPTS, Job.H_STARTED, Job.H_GROUP
local H_CHUNK, decode, headerOf, memberParts = Job.H_CHUNK, Job.decode, Job.headerOf, Job.memberParts
local remove = Job.remove
local failAttempt, giveBack, tally = Attempts.failAttempt, Attempts.giveBack, Attempts.tally
local F_HELD, flowState, saveFlowState = Flow.F_HELD, Flow.flowState, Flow.saveFlowState
local ringIfClaimable = Flow.ringIfClaimable
local k = { delayed = KEYS[1], ready = KEYS[2], jobs = KEYS[4], bodies = KEYS[5], dead = KEYS[6] }
local runningKey, doneKey = KEYS[3], KEYS[7]
local now, limit = Clock.clock(ARGV[1]), tonumber(ARGV[2])
local defaultMax, defaultBackoff, rand = tonumber(ARGV[3]), ARGV[4], tonumber(ARGV[5])
local deadRetention = tonumber(ARGV[6])
local budget = Budget.byteBudget(tonumber(ARGV[7]))
local flow = ARGV[8] == '1'
local moved, purged, more = 0, 0, 0
local ended = { givenBack = 0, retried = 0, deadLettered = 0 }
-- the flow keys' states this call changes are written once, before the ring's length is read
Flow.flowBatch()

-- Takes up to `limit` members of zset `key` scored up to `maxScore`, lowest first, and calls
-- fn(id, record) for each, within the budget; removes the members it took, and returns how many.
-- A member whose record is gone is just removed.
-- The records are read READ_CHUNK at a time (one HMGET); fn changes no other member's record.
local READ_CHUNK = 100
local function drain(key, maxScore, fn)
  local ids = redis.call('ZRANGEBYSCORE', key, '-inf', string.format('%d', maxScore), 'LIMIT', '0', ARGV[2])
  local taken, stopped = 0, false
  for from = 1, #ids, READ_CHUNK do
    local last = math.min(#ids, from + READ_CHUNK - 1)
    local records = redis.call('HMGET', k.jobs, unpack(ids, from, last))
    for j = from, last do
      local record = records[j - from + 1]
      if record then
        if not budget.take(#record) then
          more, stopped = 1, true
          break
        end
        fn(ids[j], record)
      end
      taken = taken + 1
    end
    if stopped then break end
  end
  if taken > 0 then redis.call('ZREMRANGEBYRANK', key, '0', string.format('%d', taken - 1)) end
  if #ids == limit then more = 1 end
  return taken
end

local backs = {} -- never-started attempts given back together, in deadline order (backToHead)
drain(runningKey, now, function(id, record)
  local h, inline = decode(record)
  if h[H_STATE] ~= RUNNING then return end
  local code
  if not h[H_STARTED] then
    -- claimed but never started: the fan-out died, the event was lost or came too late
    code = giveBack(k, id, h, inline, now, 'never started: no handler took its claim within the ttr', defaultMax, defaultBackoff, rand, backs)
  else
    -- started: the handler did not answer in time, a failed attempt
    local err = 'attempt ' .. h[H_ATTEMPTS] .. ' timed out: no ack within its ttr'
    code = failAttempt(k, id, h, inline, now, err, defaultMax, defaultBackoff, rand, false, Job.A_TIMED_OUT)
  end
  tally(ended, code)
end)
Attempts.backToHead(k, backs, now)

-- (numbers passed to redis.call as strings: a number argument costs a '%.17g' format)
local nowArg = string.format('%d', now)
local due = redis.call('ZRANGEBYSCORE', k.delayed, '-inf', nowArg, 'LIMIT', '0', ARGV[2])
if #due > 0 then
  redis.call('ZREMRANGEBYRANK', k.delayed, '0', string.format('%d', #due - 1))
  moved = #due
  if #due == limit then more = 1 end
  -- a member with a priority holds a tab (delayedMember in includes/job.lua): one look for one in
  -- all the due members together (a string.find a member costs more), so that a sweep of jobs
  -- without priorities reads their members as it did before there were any
  local find, match = string.find, string.match
  local prioritized = find(table.concat(due, ' '), '\t', 1, true)
  if flow then
    -- each to its key's lane, its key read off its member (memberParts in includes/job.lua); a
    -- key's ids go in one push, in due order, the keys in the order their first ids fell due
    -- (flowRoute); a key's lone id is kept as a string, a list made at its second
    -- (and its priority, when it has one: to its key's prioritized zset, flowRoute)
    local idsOf, keys, priorityOf = {}, {}, nil
    for i = 1, #due do
      local member = due[i]
      local id, key, priority
      if prioritized then
        id, key, priority = memberParts(member)
        if priority then
          priorityOf = priorityOf or {}
          priorityOf[id] = priority
        end
      else
        -- no tab: the id, then a space and the key, or the id alone (memberParts' result then)
        id, key = match(member, '^([^ ]*) (.*)$')
        if not id then id, key = member, '' end
      end
      local ids = idsOf[key]
      if not ids then
        idsOf[key] = id
        keys[#keys + 1] = key
      elseif type(ids) == 'string' then
        idsOf[key] = { ids, id }
      else
        ids[#ids + 1] = id
      end
    end
    Flow.flowRoute(k.jobs, keys, idsOf, priorityOf)
    Flow.countReady(Flow.flowKeys(k.jobs), #due)
  elseif not prioritized then
    redis.call('RPUSH', k.ready, unpack(due))
    redis.call('HINCRBY', k.jobs, Job.READY_TAIL_FIELD, string.format('%d', #due))
  else
    -- to the ready list, or, a member with a priority, to the prioritized zset
    -- (includes/priority.lua); no record read
    local plain, ids, priorities = {}, {}, {}
    for i = 1, #due do
      local member = due[i]
      if find(member, '\t', 1, true) then
        local id, _, priority = memberParts(member)
        ids[#ids + 1], priorities[#priorities + 1] = id, priority
      else
        plain[#plain + 1] = member
      end
    end
    if #plain > 0 then
      redis.call('RPUSH', k.ready, unpack(plain))
      redis.call('HINCRBY', k.jobs, Job.READY_TAIL_FIELD, string.format('%d', #plain))
    end
    Priority.pushTail(k.jobs, k.ready, ids, priorities)
  end
end

local f = flow and Flow.flowKeys(k.jobs)
if flow then
  -- keys whose pace let them go again: back in the ring (or their state deleted, at rest)
  local held = redis.call('ZRANGEBYSCORE', f.wait, '-inf', nowArg, 'LIMIT', '0', ARGV[2])
  for _, key in ipairs(held) do
    local st = flowState(f, key)
    st[F_HELD] = 0
    ringIfClaimable(f, key, st)
    saveFlowState(f, key, st, now)
  end
  if #held > 0 then redis.call('ZREMRANGEBYRANK', f.wait, '0', string.format('%d', #held - 1)) end
  if #held == limit then more = 1 end
end

local left = {}
-- Purges a job whose retention ended when its state is `state1`, `state2` or `state3`.
local function purge(state1, state2, state3)
  return function(id, record)
    local h = headerOf(record)
    local state = h[H_STATE]
    if state == state1 or state == state2 or state == state3 then
      remove(k.jobs, k.bodies, id, h)
      purged = purged + 1
      if h[H_GROUP] then
        left[#left + 1] = h[H_GROUP]
        left[#left + 1] = id
        left[#left + 1] = h[H_CHUNK] or 0
      end
    end
  end
end
-- the done zset keeps every job that ended other than dead: done, cancelled and expired
drain(doneKey, now, purge(Codes.DONE, Codes.CANCELLED, Codes.EXPIRED))
drain(k.dead, now - deadRetention, purge(Codes.DEAD, Codes.DEAD, Codes.DEAD))

Flow.flowFlush()
local nextAt = Head.headScore(k.delayed)
local deadline = Head.headScore(runningKey)
if deadline and (not nextAt or deadline < nextAt) then nextAt = deadline end
local ready
if flow then
  local let = Head.headScore(f.wait)
  if let and (not nextAt or let < nextAt) then nextAt = let end
  ready = redis.call('LLEN', f.ring)
else
  ready = redis.call('LLEN', k.ready)
end
if ready > 0 and Flow.topicPaused(k.jobs) then ready = 0 end
return { moved, ended.retried, ended.deadLettered, purged, more, nextAt, now, ready, ended.givenBack, left, Head.headScore(KEYS[8]) }
