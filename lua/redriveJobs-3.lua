--[[
  Moves dead jobs back to delayed, due now, with their attempts reset to 0 (the last error is
  kept until the next attempt ends). Rewrites each record's header only, and stops before the job
  whose record would pass the byte budget (never before the first).
  KEYS[1] dead zset  KEYS[2] delayed zset  KEYS[3] jobs hash
  ARGV[1] fixed clock ms or ''  ARGV[2] n: redrive the n oldest dead jobs, when no ids follow
  ARGV[3] byte budget of the records read  ARGV[4] the name of the API key that redrives, or ''
  (updatedBy)
  ARGV[5..] ids to redrive (ids that are not dead are skipped)
  Returns { redriven, headChanged 0|1, looked, more 0|1 } where looked counts the ids (given, or
  oldest dead) looked at, in order, and more = 1 when the budget stopped the redrive before the
  rest: the caller redrives those in another call.
  Mirrored by RedriveReply in lib/engine/scripts.ts.
]]
--- @include "codes"
--- @include "clock"
--- @include "budget"
--- @include "head"
--- @include "job"
local deadKey, delayedKey, jobsKey = KEYS[1], KEYS[2], KEYS[3]
local now = Clock.clock(ARGV[1])
local budget = Budget.byteBudget(tonumber(ARGV[3]))
local by = ARGV[4]
if by == '' then by = false end
local given = #ARGV > 4
local ids = {}
if given then
  for i = 5, #ARGV do ids[#ids + 1] = ARGV[i] end
else
  ids = redis.call('ZRANGE', deadKey, 0, tonumber(ARGV[2]) - 1)
end
if #ids == 0 then return { 0, 0, 0, 0 } end

local headBefore = Head.headScore(delayedKey)
local redriven, looked, more = 0, 0, 0
for _, id in ipairs(ids) do
  if not given or redis.call('ZSCORE', deadKey, id) then
    local record = redis.call('HGET', jobsKey, id)
    if record then
      if not budget.take(#record) then
        more = 1
        break
      end
      local h, inline = Job.decode(record)
      h[Job.H_STATE], h[Job.H_ATTEMPTS], h[Job.H_RUN_AT], h[Job.H_UPDATED] = Codes.PENDING, 0, now, now
      if by then h[Job.H_BY] = Job.byRef(jobsKey, by) end
      Job.save(jobsKey, id, h, inline)
      redis.call('ZADD', delayedKey, now, Job.delayedMember(id, h[Job.H_KEY], h[Job.H_PRIORITY]))
      redriven = redriven + 1
    end
    redis.call('ZREM', deadKey, id)
  end
  looked = looked + 1
end
local headChanged = 0
if redriven > 0 and (not headBefore or now < headBefore) then headChanged = 1 end
return { redriven, headChanged, looked, more }
