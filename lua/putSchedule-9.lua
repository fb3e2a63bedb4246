--[[
  Creates or replaces a schedule of one topic and partition, and replaces its pending occurrence in
  the same step. The caller (lib/engine/schedules.ts) read the schedule, computed the run times
  with the cron arithmetic, and passes them; it passes the version it read, so a schedule changed
  since (put, advanced, deleted) refuses and the caller reads and computes again.
  KEYS[1] schedules hash  KEYS[2] schedule ids zset  KEYS[3] schedule next zset  KEYS[4] jobs hash
  KEYS[5] bodies hash  KEYS[6] delayed zset  KEYS[7] running zset  KEYS[8] done zset
  KEYS[9] the key of the schedule's group (its first zset; the empty group's key when it has none)
  ARGV[1] fixed clock ms or ''  ARGV[2] schedule id
  ARGV[3] version the caller read: 0 when there was no schedule
  ARGV[4] 'keep': the pending occurrence is due, so it is left to run (handed over); 'replace': it
          is withdrawn while still pending (one that started runs on). A 'replace' of a pending
          occurrence whose run time has come (by this script's clock) is refused as a stale read:
          the plan was computed before it, and by now the occurrence may have been claimed, run and
          deleted (retention 0), so a resume's catch-up would make it again; the caller reads again
          and keeps it. 'hold' (a pause): the pending occurrence and the one handed over last are
          withdrawn while pending, or cancelled while claimed but not started (a start then
          refuses them), so no occurrence starts after the pause; one that started runs on. A
          pending occurrence whose run time has come and that was not held back (it started, or
          ran and is gone) is recorded as handed over, so a resume does not make it again
  ARGV[5] the latest occurrence handed over, ms or ''
  ARGV[6] id and ARGV[7] due time (ms) of an occurrence to create now (a missed one caught up on
          resume), or ''
  ARGV[8] id and ARGV[9] run time (ms) of the next occurrence (the new pending one), or '' (paused,
          or none); ARGV[17] its due time (the run time plus its jitter offset)
  ARGV[10] maxAttempts|''  ARGV[11] ttr ms|''  ARGV[12] backoff spec|''  ARGV[13] url|''
  ARGV[14] group|''  ARGV[15] definition (JSON; its expireAfterMs, when set, gives each occurrence
          an expiry that long after its due time: H_EXPIRES)  ARGV[16] body (JSON text)
  ARGV[18] the name of the API key that puts it, or '' (updatedBy)
  ARGV[19] the flow key each occurrence carries (a flow topic's schedule), or '' for none
  Each occurrence this script or lua/advanceSchedule-8.lua creates takes the options, body, flow
  key and expiry the record holds then. So a put with another flow key (or expiry) gives it to the
  occurrences it creates (the new pending one, made again under the same id when 'replace' withdrew
  the old one, and a caught-up one); an occurrence it does not create (left to run by 'keep',
  handed over before, claimed) keeps the flow key and expiry it was created with.
  An occurrence whose id is taken by a job that is not cancelled is not created again: that job
  is the occurrence (deterministic ids: an occurrence is never doubled).
  The occurrence kept or caught up on is recorded as handed over (includes/schedules.lua
  S_LAST_ID); the one handed over before it, if its jitter still holds it back, falls due now
  (includes/occurrences.lua handOver).
  An occurrence made anew from a cancelled job of another group (a put that changed the group
  withdraws the pending occurrence and creates it again under the same id) is not taken out of the
  old group here (its key is not this call's): the reply lists it, and the caller calls
  lua/leaveGroup-2.lua.
  While the partition count changes, a partition of the former layout that is closed (MOVED_FIELD
  in the jobs hash: a move or a write through it closed it) refuses a new schedule id, and a
  schedule frozen for its move (includes/schedules.lua MOVE.FROZEN) refuses every write: the caller
  writes it in the layout of the count replied (its current partition, after the move).
  ARGV[4] 'adopt' is a move's second step (lib/engine/relayout-schedules.ts), in the schedule's
  current partition: ARGV[20] the frozen record as lua/deleteSchedule-8.lua 'freeze' replied it
  (JSON of its slots); ARGV[3], ARGV[5..19] unused. The schedule is made here from it, unless this
  partition holds it already (moved before, or put here since) or holds its MOVE.gone at the
  frozen version or later (moved, then deleted): one copy, never made again. Its version grows
  from the frozen one; its options, definition, body, pending occurrence, last run and pause stay;
  the occurrences the freeze withdrew are made again here under their ids and due times.
  Returns { OUTCOME.CREATED | OUTCOME.REPLACED, version, headChanged 0|1, left } (left: { id,
          group, chunk } per occurrence that left a group) or
          { REFUSAL.VERSION_MISMATCH, version now (0: none) }: nothing changed (the version
          differs from ARGV[3], or, at the version read, a stale 'replace' as above), or
          { RELAYOUT.MOVED, count }: nothing changed, as above. 'adopt' returns
          { RELAYOUT.ADOPTED, version, headChanged 0|1, left, earliest due time of the occurrences
          made again or nil } or { REFUSAL.JOB_EXISTS }: nothing changed, as above.
  Mirrored by PutScheduleReply and AdoptScheduleReply in lib/engine/scripts.ts.
]]
--- @include "codes"
--- @include "clock"
--- @include "argv"
--- @include "head"
--- @include "job"
--- @include "cancel"
--- @include "schedules"
--- @include "occurrences"
local k = { jobs = KEYS[4], bodies = KEYS[5], delayed = KEYS[6], running = KEYS[7], done = KEYS[8] }
local schedulesKey, idsKey, nextKey, groupKey = KEYS[1], KEYS[2], KEYS[3], KEYS[9]
local now, id = Clock.clock(ARGV[1]), ARGV[2]

local record = redis.call('HGET', schedulesKey, id)

-- a move's second step: the schedule made here from its frozen record
if ARGV[4] == 'adopt' then
  if record then return { Codes.REFUSAL.JOB_EXISTS } end
  local r = cjson.decode(ARGV[20])
  local gone = redis.call('HGET', schedulesKey, Schedules.MOVE.gone(id))
  if gone and tonumber(gone) >= r[Schedules.S_VERSION] then return { Codes.REFUSAL.JOB_EXISTS } end
  local headBefore = Head.headScore(k.delayed)
  local options = Occurrences.occurrenceOptions(r)
  local lefts, earliest = {}, false
  for _, made in ipairs({ { r[Schedules.S_NEXT_ID], r[Schedules.MOVE.NEXT_DUE] }, { r[Schedules.S_LAST_ID], r[Schedules.MOVE.LAST_DUE] } }) do
    if made[1] and made[2] then
      Occurrences.noteLeft(lefts, made[1], Occurrences.createJob(k, groupKey, made[1], made[2], now, options, r[Schedules.S_BODY]))
      if not earliest or made[2] < earliest then earliest = made[2] end
    end
  end
  if r[Schedules.S_NEXT_ID] then redis.call('ZADD', nextKey, r[Schedules.S_NEXT], id) end
  r[Schedules.MOVE.FROM] = r[Schedules.S_VERSION]
  r[Schedules.MOVE.FROZEN], r[Schedules.MOVE.NEXT_DUE], r[Schedules.MOVE.LAST_DUE] = false, false, false
  r[Schedules.S_VERSION] = Job.nextVersion(schedulesKey, r[Schedules.MOVE.FROM])
  redis.call('HSET', schedulesKey, id, cmsgpack.pack(r))
  redis.call('ZADD', idsKey, 0, id)
  local headAfter = Head.headScore(k.delayed)
  local headChanged = 0
  if headAfter and (not headBefore or headAfter < headBefore) then headChanged = 1 end
  return { Codes.RELAYOUT.ADOPTED, r[Schedules.S_VERSION], headChanged, lefts, earliest }
end

local old = false
if record then old = cmsgpack.unpack(record) end
-- frozen for its move, or a new id in a closed partition of a former layout: written in the current layout
if old and old[Schedules.MOVE.FROZEN] then return { Codes.RELAYOUT.MOVED, old[Schedules.MOVE.FROZEN] } end
-- the new pending occurrence's record read with the closing mark (no request of its own)
local prefetched = nil
if not old then
  local moved
  if ARGV[8] ~= '' then
    local got = redis.call('HMGET', k.jobs, Codes.MOVED_FIELD, ARGV[8])
    moved, prefetched = got[1], got[2]
  else
    moved = redis.call('HGET', k.jobs, Codes.MOVED_FIELD)
  end
  if moved then return { Codes.RELAYOUT.MOVED, tonumber(moved) } end
end
local version = 0
if old then version = old[Schedules.S_VERSION] end
if version ~= tonumber(ARGV[3]) then return { Codes.REFUSAL.VERSION_MISMATCH, version } end
-- a plan that withdraws the pending occurrence was computed before its run time: by now it may
-- have been claimed, even run and deleted, and a resume would make it again
if old and old[Schedules.S_NEXT_ID] and ARGV[4] == 'replace' and old[Schedules.S_NEXT] <= now then return { Codes.REFUSAL.VERSION_MISMATCH, version } end

local headBefore = Head.headScore(k.delayed)
if old and old[Schedules.S_NEXT_ID] and ARGV[4] == 'replace' then Cancel.withdraw(k, old[Schedules.S_NEXT_ID], now) end
local ranAt = false -- hold: the pending occurrence's run time, when it started or ran
if old and ARGV[4] == 'hold' then
  if old[Schedules.S_LAST_ID] then Cancel.holdOccurrence(k, old[Schedules.S_LAST_ID], now) end
  if old[Schedules.S_NEXT_ID] and not Cancel.holdOccurrence(k, old[Schedules.S_NEXT_ID], now) and old[Schedules.S_NEXT] <= now then ranAt = old[Schedules.S_NEXT] end
end

local r = { false, false, false, Argv.optionalNumber(ARGV[5]), Argv.optionalNumber(ARGV[10]), Argv.optionalNumber(ARGV[11]),
  Argv.optional(ARGV[12]), Argv.optional(ARGV[13]), Argv.optional(ARGV[14]), now, now, ARGV[15], ARGV[16], false, Argv.optional(ARGV[18]),
  Argv.optional(ARGV[19]) }
if old then r[Schedules.S_CREATED], r[Schedules.S_LAST_ID] = old[Schedules.S_CREATED], old[Schedules.S_LAST_ID] or false end
if old and old[Schedules.MOVE.FROM] then r[Schedules.MOVE.FROZEN], r[Schedules.MOVE.NEXT_DUE], r[Schedules.MOVE.LAST_DUE], r[Schedules.MOVE.FROM] = false, false, false, old[Schedules.MOVE.FROM] end
if ranAt and (not r[Schedules.S_LAST] or ranAt > r[Schedules.S_LAST]) then r[Schedules.S_LAST], r[Schedules.S_LAST_ID] = ranAt, old[Schedules.S_NEXT_ID] end
local options = Occurrences.occurrenceOptions(r)
local lefts = {}
if old and old[Schedules.S_NEXT_ID] and ARGV[4] == 'keep' then Occurrences.handOver(k, r, old[Schedules.S_NEXT_ID], now) end
if ARGV[6] ~= '' then
  Occurrences.noteLeft(lefts, ARGV[6], Occurrences.createJob(k, groupKey, ARGV[6], tonumber(ARGV[7]), now, options, r[Schedules.S_BODY]))
  Occurrences.handOver(k, r, ARGV[6], now)
end
if ARGV[8] ~= '' then
  r[Schedules.S_NEXT], r[Schedules.S_NEXT_ID] = tonumber(ARGV[9]), ARGV[8]
  Occurrences.noteLeft(lefts, ARGV[8], Occurrences.createJob(k, groupKey, ARGV[8], tonumber(ARGV[17]), now, options, r[Schedules.S_BODY], prefetched))
  redis.call('ZADD', nextKey, r[Schedules.S_NEXT], id)
else
  redis.call('ZREM', nextKey, id)
end
r[Schedules.S_VERSION] = Job.nextVersion(schedulesKey)
redis.call('HSET', schedulesKey, id, cmsgpack.pack(r))
redis.call('ZADD', idsKey, 0, id)

local headAfter = Head.headScore(k.delayed)
return { old and Codes.OUTCOME.REPLACED or Codes.OUTCOME.CREATED, r[Schedules.S_VERSION], (headAfter and (not headBefore or headAfter < headBefore)) and 1 or 0, lefts }
