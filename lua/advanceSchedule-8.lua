--[[
  Moves a schedule on from its pending occurrence, which is due: creates the next occurrence and
  records the move, in one step. The caller (the sweeper, lib/engine/schedules.ts) read the
  schedule, computed with the cron arithmetic which occurrence runs and when the next is, and
  passes the version it read: a schedule changed since (advanced already, put, deleted) refuses,
  so a second call with what the first saw changes nothing, and a sweeper killed before or after
  this call neither loses nor doubles an occurrence.
  KEYS[1] schedules hash  KEYS[2] schedule next zset  KEYS[3] jobs hash  KEYS[4] bodies hash
  KEYS[5] delayed zset  KEYS[6] running zset  KEYS[7] done zset
  KEYS[8] the key of the schedule's group (its first zset; the empty group's key when it has none)
  ARGV[1] fixed clock ms or ''  ARGV[2] schedule id  ARGV[3] version the caller read
  ARGV[4] id and ARGV[5] due time (ms) of the occurrence that runs for the runs now due, or '' for none.
          The pending one runs when it is that one; otherwise, while it waits for its first attempt
          (pending, never attempted), it is withdrawn and the one named is created, due at once.
          A pending one no longer waiting stands for the runs due and nothing is created (never two
          for one catch-up): one claimed since the caller's read (running, waiting for a retry,
          finished), one cancelled, and one gone (deleted when it finished or was cancelled with
          retention 0: it may have run), so a cancel of the pending occurrence cancels the catch-up
  ARGV[6] id and ARGV[7] run time (ms) of the next occurrence, or '' when there is none;
          ARGV[9] its due time (the run time plus its jitter offset)
  ARGV[8] ms of the latest occurrence handed over (the one that runs, or the latest skipped)
  Each occurrence it creates takes the options, body, flow key and expiry (the definition's
  expireAfterMs after its due time) the record holds (includes/occurrences.lua occurrenceOptions).
  The occurrence that runs (or stands for the runs due) is recorded as handed over
  (includes/schedules.lua S_LAST_ID); the one handed over before it, if its jitter still holds it
  back, falls due now (includes/occurrences.lua handOver): a schedule never holds back more than
  one occurrence. The reply says when (released), so the sweeper moves it without waiting.
  An occurrence made anew from a cancelled job of another group is not taken out of the old group
  here (its key is not this call's): the reply lists it, and the caller calls lua/leaveGroup-2.lua.
  Returns { OUTCOME.ADVANCED, version, occurrences created, left, released } (left: { id, group,
  chunk } per occurrence that left a group; released: this call's clock (ms) when it made an
  occurrence held back fall due now, else nil), { REFUSAL.NOT_FOUND } or
          { REFUSAL.VERSION_MISMATCH, version now }: nothing changed.
  Mirrored by AdvanceReply in lib/engine/scripts.ts.
]]
--- @include "codes"
--- @include "clock"
--- @include "job"
--- @include "cancel"
--- @include "schedules"
--- @include "occurrences"
local k = { jobs = KEYS[3], bodies = KEYS[4], delayed = KEYS[5], running = KEYS[6], done = KEYS[7] }
local schedulesKey, nextKey, groupKey = KEYS[1], KEYS[2], KEYS[8]
local now, id, seen = Clock.clock(ARGV[1]), ARGV[2], tonumber(ARGV[3])
local runId, nextId = ARGV[4], ARGV[6]

-- Withdraws occurrence `id` while it waits for its first attempt (pending, never attempted), as
-- includes/cancel.lua withdraw would, and returns true; false when it is not waiting (see ARGV[4]).
local function withdrawWaiting(id)
  local job = redis.call('HGET', k.jobs, id)
  if not job then return false end
  local h, inline = Job.decode(job)
  if h[Job.H_STATE] ~= Codes.PENDING or h[Job.H_ATTEMPTS] ~= 0 then return false end
  Cancel.cancelNow(k, id, h, inline, now, 0)
  return true
end

local record = redis.call('HGET', schedulesKey, id)
if not record then return { Codes.REFUSAL.NOT_FOUND } end
local r = cmsgpack.unpack(record)
if r[Schedules.S_VERSION] ~= seen then return { Codes.REFUSAL.VERSION_MISMATCH, r[Schedules.S_VERSION] } end

local options = Occurrences.occurrenceOptions(r)
local created, lefts = 0, {}
local pending = r[Schedules.S_NEXT_ID]
local handed = pending
if runId ~= pending then
  if not pending or withdrawWaiting(pending) then
    handed = false
    if runId ~= '' then
      handed = runId
      if Occurrences.noteLeft(lefts, runId, Occurrences.createJob(k, groupKey, runId, tonumber(ARGV[5]), now, options, r[Schedules.S_BODY])) then created = created + 1 end
    end
  end
end
local released = false
if handed and Occurrences.handOver(k, r, handed, now) then released = now end
if nextId ~= '' then
  r[Schedules.S_NEXT], r[Schedules.S_NEXT_ID] = tonumber(ARGV[7]), nextId
  if Occurrences.noteLeft(lefts, nextId, Occurrences.createJob(k, groupKey, nextId, tonumber(ARGV[9]), now, options, r[Schedules.S_BODY])) then created = created + 1 end
  redis.call('ZADD', nextKey, r[Schedules.S_NEXT], id)
else
  r[Schedules.S_NEXT], r[Schedules.S_NEXT_ID] = false, false
  redis.call('ZREM', nextKey, id)
end
r[Schedules.S_LAST] = tonumber(ARGV[8])
r[Schedules.S_VERSION] = Job.nextVersion(schedulesKey)
redis.call('HSET', schedulesKey, id, cmsgpack.pack(r))
return { Codes.OUTCOME.ADVANCED, r[Schedules.S_VERSION], created, lefts, released }
