--[[
  One sweep step for one topic and partition, each part bounded by the limit:
  1. running attempts past their TTR deadline become failed attempts (retry or dead); one that
     no handler started is given back without counting (see giveBack in job.lua);
  2. due jobs move from the delayed zset to the ready list, oldest due first;
  3. done and cancelled jobs past their retention, and dead jobs older than the dead retention,
     are deleted.
  KEYS[1] delayed zset  KEYS[2] ready list  KEYS[3] running zset  KEYS[4] jobs hash
  KEYS[5] dead zset  KEYS[6] done zset
  ARGV[1] fixed clock ms or ''  ARGV[2] limit per part  ARGV[3] the topic's max attempts
  ARGV[4] the topic's backoff spec  ARGV[5] random number in [0, 1) for jitter
  ARGV[6] dead retention ms
  Returns { moved, retried, deadLettered, purged, more 0|1, nextAt ms or nil, now, ready, givenBack }
  where more = 1 when a part hit its limit (call again now), nextAt is the earliest of the next
  due job and the next TTR deadline, ready is the ready list's length after the move (and the
  give-backs), and givenBack counts the attempts given back without counting.
  Mirrored by MoveDueReply in lib/engine/scripts.ts.
]]
local delayedKey, readyKey, runningKey, jobsKey, deadKey, doneKey = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6]
local now, limit = clock(ARGV[1]), tonumber(ARGV[2])
local defaultMax, defaultBackoff, rand = tonumber(ARGV[3]), ARGV[4], tonumber(ARGV[5])
local deadRetention = tonumber(ARGV[6])
local moved, purged, more = 0, 0, 0
local ended = { givenBack = 0, retried = 0, deadLettered = 0 }

local expired = redis.call('ZRANGEBYSCORE', runningKey, '-inf', now, 'LIMIT', 0, limit)
if #expired > 0 then
  redis.call('ZREMRANGEBYRANK', runningKey, 0, #expired - 1)
  for _, id in ipairs(expired) do
    local record = redis.call('HGET', jobsKey, id)
    if record then
      local h, body = decode(record)
      if h[H_STATE] == RUNNING then
        local code
        if h[H_CLAIM] and not h[H_STARTED] then
          -- claimed but never started: the fan-out died, the event was lost or came too late
          code = giveBack(jobsKey, readyKey, delayedKey, deadKey, id, h, body, now,
            'never started: no handler took its claim within the ttr', defaultMax, defaultBackoff, rand)
        else
          -- started, or a claim of older code (which marks no start): counts as it always did
          local err = 'attempt ' .. h[H_ATTEMPTS] .. ' timed out: no ack within its ttr'
          code = failAttempt(jobsKey, delayedKey, deadKey, id, h, body, now, err, defaultMax, defaultBackoff, rand, false)
        end
        tally(ended, code)
      end
    end
  end
  if #expired == limit then more = 1 end
end

local due = redis.call('ZRANGEBYSCORE', delayedKey, '-inf', now, 'LIMIT', 0, limit)
if #due > 0 then
  redis.call('ZREMRANGEBYRANK', delayedKey, 0, #due - 1)
  redis.call('RPUSH', readyKey, unpack(due))
  moved = #due
  if #due == limit then more = 1 end
end

local function purge(key, maxScore, state1, state2)
  local ids = redis.call('ZRANGEBYSCORE', key, '-inf', maxScore, 'LIMIT', 0, limit)
  if #ids == 0 then return end
  redis.call('ZREMRANGEBYRANK', key, 0, #ids - 1)
  for _, id in ipairs(ids) do
    local record = redis.call('HGET', jobsKey, id)
    if record then
      local state = decode(record)[H_STATE]
      if state == state1 or state == state2 then
        redis.call('HDEL', jobsKey, id)
        purged = purged + 1
      end
    end
  end
  if #ids == limit then more = 1 end
end
purge(doneKey, now, DONE, CANCELLED)
purge(deadKey, now - deadRetention, DEAD, DEAD)

local nextAt = headScore(delayedKey)
local deadline = headScore(runningKey)
if deadline and (not nextAt or deadline < nextAt) then nextAt = deadline end
return { moved, ended.retried, ended.deadLettered, purged, more, nextAt, now, redis.call('LLEN', readyKey), ended.givenBack }
