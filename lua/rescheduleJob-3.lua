--[[
  Changes the due time and/or the body of a pending (delayed or ready) job. A change of the due
  time alone rewrites the record's header only; reads the one body for the reply.
  KEYS[1] jobs hash  KEYS[2] bodies hash  KEYS[3] delayed zset
  ARGV[1] fixed clock ms or ''  ARGV[2] id  ARGV[3] 'd' (delay ms) | 'a' (absolute ms) | '' (keep)
  ARGV[4] ms  ARGV[5] '1' to replace the body | '0'  ARGV[6] body
  Returns { OUTCOME.RESCHEDULED, headChanged 0|1, view }, { REFUSAL.NOT_FOUND },
          { REFUSAL.JOB_FINISHED, view } (running, done, dead or cancelled: nothing changed)
  Mirrored by RescheduleReply in lib/engine/scripts.ts.
]]
--- @include "codes"
--- @include "clock"
--- @include "head"
--- @include "job"
local jobsKey, bodiesKey, delayedKey = KEYS[1], KEYS[2], KEYS[3]
local now, id = Clock.clock(ARGV[1]), ARGV[2]
local record = redis.call('HGET', jobsKey, id)
if not record then return { Codes.REFUSAL.NOT_FOUND } end
local h, inline = Job.decode(record)
if h[Job.H_STATE] ~= Codes.PENDING then return { Codes.REFUSAL.JOB_FINISHED, Job.view(jobsKey, delayedKey, id, h, Job.loadBody(bodiesKey, id, inline)) } end

h[Job.H_UPDATED] = now
local headChanged = 0
if ARGV[3] ~= '' then
  local due = tonumber(ARGV[4])
  if ARGV[3] == 'd' then due = now + due end
  local headBefore = Head.headScore(delayedKey)
  h[Job.H_RUN_AT] = due
  -- A ready job goes back to delayed; its id left in the ready list is skipped by claim.
  redis.call('ZADD', delayedKey, due, Job.delayedMember(id, h[Job.H_KEY], h[Job.H_PRIORITY]))
  if not headBefore or due < headBefore then headChanged = 1 end
end
local body
if ARGV[5] == '1' then
  body = ARGV[6]
  Job.store(jobsKey, bodiesKey, id, h, body, true)
else
  body = Job.loadBody(bodiesKey, id, inline)
  Job.save(jobsKey, id, h, inline)
end
return { Codes.OUTCOME.RESCHEDULED, headChanged, Job.view(jobsKey, delayedKey, id, h, body) }
