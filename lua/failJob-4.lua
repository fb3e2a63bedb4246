--[[
  Finishes a running attempt as failed: schedules the next attempt after the backoff, or
  dead-letters the job when its attempts are used up. Rewrites the record's header only.
  KEYS[1] jobs hash  KEYS[2] running zset  KEYS[3] delayed zset  KEYS[4] dead zset
  ARGV[1] fixed clock ms or ''  ARGV[2] id  ARGV[3] attempt number the caller ran
  ARGV[4] error message  ARGV[5] the topic's max attempts  ARGV[6] the topic's backoff spec
  ARGV[7] random number in [0, 1) for jitter  ARGV[8] retry after this many ms instead of the
          backoff, or ''
  ARGV[9] the attempt's claim token
  Returns { OUTCOME.RETRY_SCHEDULED, runAt, headChanged 0|1 }, { OUTCOME.DEAD_LETTERED, notify 0|1
          (1: the end went to the outbox, includes/callbacks.lua) },
          or { REFUSAL.NOT_FOUND | REFUSAL.STALE_ATTEMPT | REFUSAL.CANCELLED } (nothing changed)
  Mirrored by FailReply in lib/engine/scripts.ts.
]]
--- @include "codes"
--- @include "clock"
--- @include "argv"
--- @include "head"
--- @include "job"
--- @include "attempts"
local k = { jobs = KEYS[1], delayed = KEYS[3], dead = KEYS[4] }
local runningKey = KEYS[2]
local now, id = Clock.clock(ARGV[1]), ARGV[2]
local record = redis.call('HGET', k.jobs, id)
if not record then return { Codes.REFUSAL.NOT_FOUND } end
local h, inline = Job.decode(record)
if h[Job.H_STATE] == Codes.CANCELLED then return { Codes.REFUSAL.CANCELLED } end
if not Attempts.isAttempt(h, ARGV[3], ARGV[9]) then return { Codes.REFUSAL.STALE_ATTEMPT } end

redis.call('ZREM', runningKey, id)
local headBefore = Head.headScore(k.delayed)
local code, due = Attempts.failAttempt(k, id, h, inline, now, ARGV[4],
  tonumber(ARGV[5]), ARGV[6], tonumber(ARGV[7]), Argv.optionalNumber(ARGV[8]))
if code == Codes.OUTCOME.DEAD_LETTERED then return { Codes.OUTCOME.DEAD_LETTERED, due and 1 or 0 } end
local headChanged = 0
if not headBefore or due < headBefore then headChanged = 1 end
return { Codes.OUTCOME.RETRY_SCHEDULED, due, headChanged }
