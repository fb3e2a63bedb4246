--[[
  Gives claimed jobs back after their handler could not be invoked: each goes to the front of its
  ready list without counting the attempt, unless it was given back MAX_GIVE_BACKS times in a row
  already; then this give-back counts as a failed attempt (retry after the backoff, or dead) with
  the reason as its lastError (giveBack in job.lua).
  KEYS[1] jobs hash  KEYS[2] running zset  KEYS[3] ready list  KEYS[4] delayed zset  KEYS[5] dead zset
  ARGV[1] fixed clock ms or ''  ARGV[2] the topic's max attempts  ARGV[3] the topic's backoff spec
  ARGV[4] random number in [0, 1) for jitter  ARGV[5] why the invoke failed
  ARGV[6..] triples: id, attempt number that was claimed, claim token ('' for a claim of older code)
  Returns { released, retried, deadLettered }; an id not running that claim is left as it is.
  Mirrored by ReleaseReply in lib/engine/scripts.ts.
]]
local jobsKey, runningKey, readyKey, delayedKey, deadKey = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local now = clock(ARGV[1])
local defaultMax, defaultBackoff, rand, reason = tonumber(ARGV[2]), ARGV[3], tonumber(ARGV[4]), ARGV[5]
local ended = { givenBack = 0, retried = 0, deadLettered = 0 }
for i = 6, #ARGV, 3 do
  local id = ARGV[i]
  local record = redis.call('HGET', jobsKey, id)
  if record then
    local h, body = decode(record)
    if isAttempt(h, ARGV[i + 1], ARGV[i + 2]) then
      redis.call('ZREM', runningKey, id)
      local code = giveBack(jobsKey, readyKey, delayedKey, deadKey, id, h, body, now,
        'could not be invoked: ' .. reason, defaultMax, defaultBackoff, rand)
      tally(ended, code)
    end
  end
end
return { ended.givenBack, ended.retried, ended.deadLettered }
