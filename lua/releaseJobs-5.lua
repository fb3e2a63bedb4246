--[[
  Gives claimed jobs back after their handler could not be invoked: each goes to the front of its
  ready list without counting the attempt, unless it was given back MAX_GIVE_BACKS times in a row
  already; then this give-back counts as a failed attempt (retry after the backoff, or dead) with
  the reason as its lastError (giveBack in includes/attempts.lua). Rewrites each record's header
  only, and stops before the job whose record would pass the byte budget (never before the first).
  KEYS[1] jobs hash  KEYS[2] running zset  KEYS[3] ready list  KEYS[4] delayed zset  KEYS[5] dead zset
  ARGV[1] fixed clock ms or ''  ARGV[2] the topic's max attempts  ARGV[3] the topic's backoff spec
  ARGV[4] random number in [0, 1) for jitter  ARGV[5] why the invoke failed
  ARGV[6] byte budget of the records read
  ARGV[7..] triples: id, attempt number that was claimed, claim token
  Returns { released, retried, deadLettered, looked }; an id not running that claim is left as it
  is. looked counts the triples looked at, in order: the caller sends the rest in another call.
  Mirrored by ReleaseReply in lib/engine/scripts.ts.
]]
--- @include "clock"
--- @include "budget"
--- @include "job"
--- @include "attempts"
local k = { jobs = KEYS[1], ready = KEYS[3], delayed = KEYS[4], dead = KEYS[5] }
local runningKey = KEYS[2]
local now = Clock.clock(ARGV[1])
local defaultMax, defaultBackoff, rand, reason = tonumber(ARGV[2]), ARGV[3], tonumber(ARGV[4]), ARGV[5]
local budget = Budget.byteBudget(tonumber(ARGV[6]))
local ended = { givenBack = 0, retried = 0, deadLettered = 0 }
local looked = 0
local backs = {} -- given back together, in the order the ids came (backToHead)
for i = 7, #ARGV, 3 do
  local id = ARGV[i]
  local record = redis.call('HGET', k.jobs, id)
  if record then
    if not budget.take(#record) then break end
    local h, inline = Job.decode(record)
    if Attempts.isAttempt(h, ARGV[i + 1], ARGV[i + 2]) then
      redis.call('ZREM', runningKey, id)
      local code = Attempts.giveBack(k, id, h, inline, now, 'could not be invoked: ' .. reason, defaultMax, defaultBackoff, rand, backs)
      Attempts.tally(ended, code)
    end
  end
  looked = looked + 1
end
Attempts.backToHead(k, backs, now)
return { ended.givenBack, ended.retried, ended.deadLettered, looked }
