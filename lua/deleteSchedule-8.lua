--[[
  Deletes a schedule and withdraws every occurrence of it that waits: the pending one, and the one
  handed over last while it waits for its first attempt (held back by its jitter, or ready and not
  yet claimed). One that already started runs on, and so do its retries. A schedule holds at most
  these two (includes/occurrences.lua handOver).
  While the partition count changes, it also takes the two steps of a schedule's move (lib/engine/
  relayout-schedules.ts) that happen in its partition of the former layout, by ARGV[3]:
  'freeze' closes the partition to new schedule and job ids (the current count ARGV[4] in the
  schedules hash, includes/schedules.lua MOVE.MARK, and in the jobs hash, MOVED_FIELD) and freezes
  the schedule for its move: its pending occurrence and the one handed over last, while they wait
  for their first attempt, are withdrawn (their due times kept in the record, MOVE.NEXT_DUE and
  MOVE.LAST_DUE, to be made again in the current partition), the record leaves the schedule-next
  zset (no sweep advances it here) and is marked MOVE.FROZEN: every write of it here is refused
  with MOVED from then on. A schedule with an occurrence running or waiting for a retry here is
  not frozen (BUSY): a pause or delete must still reach that occurrence; a later move takes it.
  Freezing a frozen record changes nothing and replies it again. 'drop' deletes the frozen record
  at version ARGV[4] once the current partition has it (or its MOVE.gone): the last step.
  A delete in the current partition of a schedule that moved in (MOVE.FROM) leaves MOVE.FROM
  behind under MOVE.gone, so a mover that read the frozen record before never makes it again.
  KEYS[1] schedules hash  KEYS[2] schedule ids zset  KEYS[3] schedule next zset  KEYS[4] jobs hash
  KEYS[5] bodies hash  KEYS[6] delayed zset  KEYS[7] running zset  KEYS[8] done zset
  ARGV[1] fixed clock ms or ''  ARGV[2] schedule id
  ARGV[3] '' (delete), 'freeze' or 'drop'  ARGV[4] 'freeze': the current partition count; 'drop':
          the frozen record's version
  Returns, for a delete: { OUTCOME.DELETED, 1 when an occurrence was withdrawn else 0 },
          { REFUSAL.NOT_FOUND } or { RELAYOUT.MOVED, count } (no such schedule in this closed
          partition of a former layout, or it is frozen for its move: act in the layout of `count`);
          for a freeze: { RELAYOUT.FROZEN, version, record (JSON of the record's slots) },
          { RELAYOUT.BUSY } or { REFUSAL.NOT_FOUND } (closed all the same); for a drop:
          { OUTCOME.DELETED, 0 } or { REFUSAL.NOT_FOUND }.
  Mirrored by DeleteScheduleReply, FreezeScheduleReply in lib/engine/scripts.ts.
]]
--- @include "codes"
--- @include "clock"
--- @include "job"
--- @include "cancel"
--- @include "schedules"
local k = { jobs = KEYS[4], bodies = KEYS[5], delayed = KEYS[6], running = KEYS[7], done = KEYS[8] }
local now, id, mode = Clock.clock(ARGV[1]), ARGV[2], ARGV[3] or ''
-- the record, and the closing mark read with it (no request of its own)
local got = redis.call('HMGET', KEYS[1], id, Schedules.MOVE.MARK)
local record, moved = got[1], got[2]

if mode == 'freeze' then
  local count = ARGV[4]
  if moved ~= count then
    redis.call('HSET', KEYS[1], Schedules.MOVE.MARK, count)
    redis.call('HSET', k.jobs, Codes.MOVED_FIELD, count)
  end
  if not record then return { Codes.REFUSAL.NOT_FOUND } end
  local r = cmsgpack.unpack(record)
  for slot = 1, Schedules.MOVE.FROM do
    if r[slot] == nil then r[slot] = false end
  end
  if r[Schedules.MOVE.FROZEN] then return { Codes.RELAYOUT.FROZEN, r[Schedules.S_VERSION], cjson.encode(r) } end
  -- the occurrences a pause or delete holds back or withdraws: each waits for its first attempt
  -- (withdrawn here, made again there), or has started or waits for a retry (not moved now)
  local waiting = {}
  for _, occurrence in ipairs({ r[Schedules.S_NEXT_ID], r[Schedules.S_LAST_ID] }) do
    local job = occurrence and redis.call('HGET', k.jobs, occurrence)
    if job then
      local h, inline = Job.decode(job)
      if h[Job.H_STATE] == Codes.RUNNING or (h[Job.H_STATE] == Codes.PENDING and h[Job.H_ATTEMPTS] > 0) then return { Codes.RELAYOUT.BUSY } end
      if h[Job.H_STATE] == Codes.PENDING then waiting[occurrence] = { h, inline } end
    end
  end
  for slot, occurrence in pairs({ [Schedules.MOVE.NEXT_DUE] = r[Schedules.S_NEXT_ID], [Schedules.MOVE.LAST_DUE] = r[Schedules.S_LAST_ID] }) do
    local w = occurrence and waiting[occurrence]
    if w then
      r[slot] = w[1][Job.H_RUN_AT]
      if not w.withdrawn then Cancel.cancelNow(k, occurrence, w[1], w[2], now, 0) end
      w.withdrawn = true
    end
  end
  r[Schedules.MOVE.FROZEN] = tonumber(count)
  r[Schedules.S_VERSION] = Job.nextVersion(KEYS[1])
  redis.call('HSET', KEYS[1], id, cmsgpack.pack(r))
  redis.call('ZREM', KEYS[3], id)
  return { Codes.RELAYOUT.FROZEN, r[Schedules.S_VERSION], cjson.encode(r) }
end

if not record then
  if moved and mode == '' then return { Codes.RELAYOUT.MOVED, tonumber(moved) } end
  return { Codes.REFUSAL.NOT_FOUND }
end
local r = cmsgpack.unpack(record)
if mode == 'drop' then
  if not r[Schedules.MOVE.FROZEN] or r[Schedules.S_VERSION] ~= tonumber(ARGV[4]) then return { Codes.REFUSAL.NOT_FOUND } end
  redis.call('HDEL', KEYS[1], id)
  redis.call('ZREM', KEYS[2], id)
  redis.call('ZREM', KEYS[3], id)
  return { Codes.OUTCOME.DELETED, 0 }
end
if r[Schedules.MOVE.FROZEN] then return { Codes.RELAYOUT.MOVED, r[Schedules.MOVE.FROZEN] } end
local withdrawn = 0
if r[Schedules.S_NEXT_ID] then
  local h = Job.header(k.jobs, r[Schedules.S_NEXT_ID])
  if h and h[Job.H_STATE] == Codes.PENDING then withdrawn = 1 end
  Cancel.withdraw(k, r[Schedules.S_NEXT_ID], now)
end
-- the occurrence handed over last, while it waits for its first attempt (held back by its jitter,
-- or ready and not yet claimed); a retry of one that ran follows its backoff
if r[Schedules.S_LAST_ID] and r[Schedules.S_LAST_ID] ~= r[Schedules.S_NEXT_ID] then
  local h = Job.header(k.jobs, r[Schedules.S_LAST_ID])
  if h and h[Job.H_STATE] == Codes.PENDING and h[Job.H_ATTEMPTS] == 0 then
    withdrawn = 1
    Cancel.withdraw(k, r[Schedules.S_LAST_ID], now)
  end
end
-- moved in from a former partition: a mover that read the frozen record must not make it again
if r[Schedules.MOVE.FROM] then
  local gone = redis.call('HGET', KEYS[1], Schedules.MOVE.gone(id))
  if not gone or tonumber(gone) < r[Schedules.MOVE.FROM] then redis.call('HSET', KEYS[1], Schedules.MOVE.gone(id), string.format('%d', r[Schedules.MOVE.FROM])) end
end
redis.call('HDEL', KEYS[1], id)
redis.call('ZREM', KEYS[2], id)
redis.call('ZREM', KEYS[3], id)
return { Codes.OUTCOME.DELETED, withdrawn }
