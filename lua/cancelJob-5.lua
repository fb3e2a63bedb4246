--[[
  Cancels a pending or running job. A ready job's id stays in its ready list and is skipped by
  claim (no LREM); a running job leaves the running zset, so its ack, fail and TTR expiry are
  dropped. Rewrites the record's header only, or deletes record and body; reads the one body for
  the reply.
  KEYS[1] jobs hash  KEYS[2] bodies hash  KEYS[3] delayed zset  KEYS[4] running zset
  KEYS[5] done zset
  ARGV[1] fixed clock ms or ''  ARGV[2] id  ARGV[3] retention ms (how long the cancelled job
          stays readable; 0 deletes it now, or at the next sweep when it has a group)
  ARGV[4] if-match: '' (none), '*' (any existing job) or the version the job must have
  ARGV[5] the name of the API key that cancels it, or '' (updatedBy)
  Returns { OUTCOME.CANCELLED, view }, { OUTCOME.ALREADY_CANCELLED, view },
          { REFUSAL.NOT_FOUND }, { REFUSAL.JOB_FINISHED, view } (done, dead or expired: nothing changed),
          { REFUSAL.VERSION_MISMATCH, view or nil } (if-match failed: nothing changed)
  Mirrored by CancelReply in lib/engine/scripts.ts.
]]
--- @include "codes"
--- @include "clock"
--- @include "argv"
--- @include "job"
--- @include "cancel"
local k = { jobs = KEYS[1], bodies = KEYS[2], delayed = KEYS[3], running = KEYS[4], done = KEYS[5] }
local now, id, retention, ifMatch = Clock.clock(ARGV[1]), ARGV[2], tonumber(ARGV[3]), ARGV[4]
local record = redis.call('HGET', k.jobs, id)
if not record then
  if ifMatch ~= '' then return { Codes.REFUSAL.VERSION_MISMATCH } end
  return { Codes.REFUSAL.NOT_FOUND }
end
local h, inline = Job.decode(record)
local body = Job.loadBody(k.bodies, id, inline)
if not Job.matches(ifMatch, h) then return { Codes.REFUSAL.VERSION_MISMATCH, Job.view(k.jobs, k.delayed, id, h, body) } end
local state = h[Job.H_STATE]
if state == Codes.CANCELLED then return { Codes.OUTCOME.ALREADY_CANCELLED, Job.view(k.jobs, k.delayed, id, h, body) } end
if state == Codes.DONE or state == Codes.DEAD or state == Codes.EXPIRED then
  return { Codes.REFUSAL.JOB_FINISHED, Job.view(k.jobs, k.delayed, id, h, body) }
end

Cancel.cancelNow(k, id, h, inline, now, retention, Argv.optional(ARGV[5]) or nil)
return { Codes.OUTCOME.CANCELLED, Job.view(k.jobs, k.delayed, id, h, body) }
