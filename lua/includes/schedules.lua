--[[
  Schedule records (lua/*Schedule*.lua): in the schedules hash, per schedule id, a msgpack array
  in these slots. The version comes from the hash's counter (SEQ_FIELD, see includes/job.lua), as
  a job's does. NEXT and NEXT_ID: the pending occurrence's time and job id (false: paused, or no
  run left). LAST: the latest occurrence handed over (due, so left to run, or skipped). MAX..GROUP:
  each occurrence's options, as a job header holds them. SPEC: the definition as
  lib/engine/schedules.ts writes it (JSON); the scripts read only its expireAfterMs (absent: none),
  each occurrence's expiry that long after its due time (includes/occurrences.lua). BODY: each occurrence's body (JSON text).
  LAST_ID: the job id of the occurrence handed over last (false: none yet), which its jitter may
  still hold back; not in the view. BY: the name of the API key that last put it (false: none).
  KEY: the flow key each occurrence carries (false: none, so on a flow topic the key '', as a job
  added without one).
  While the partition count changes (lib/engine/relayout-schedules.ts), a schedule moves from its
  partition of the former layout to its current one in three steps, in the slots of MOVE: FROZEN
  (in the former partition, by lua/deleteSchedule-8.lua 'freeze'): the count it moves to (false:
  not frozen); the record is inert there (out of the schedule-next zset, every write refused with
  MOVED) and holds what the new partition needs: NEXT_DUE and LAST_DUE, the due times of the
  pending occurrence and of the one handed over last, withdrawn by the freeze to be made again
  there (false: not withdrawn). FROM (in the current partition, by lua/putSchedule-9.lua 'adopt'):
  the version of the frozen record it was made from (false: it never moved); a delete leaves that
  version behind under MOVE.gone, so a mover that read the frozen record before never makes it
  again. Slots 17-20 are missing (nil) in a record written before moves existed.
]]
local Schedules = {}
do
  local S_VERSION, S_NEXT, S_NEXT_ID, S_LAST, S_MAX, S_TTR, S_BACKOFF, S_URL, S_GROUP, S_CREATED, S_UPDATED, S_SPEC, S_BODY =
    1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13
  local S_LAST_ID, S_BY, S_KEY = 14, 15, 16
  -- A move's slots (FROZEN, NEXT_DUE, LAST_DUE, FROM, above), and the fields of the schedules hash it
  -- writes, under names no id can take ('#' is not an id character): MARK, in a former layout's
  -- partition, the current count once closed (as MOVED_FIELD in the jobs hash: includes/codes.lua);
  -- gone(id), in the current partition, the version a schedule moved in from, after it was deleted.
  local MOVE = { FROZEN = 17, NEXT_DUE = 18, LAST_DUE = 19, FROM = 20, MARK = '#moved' }
  function MOVE.gone(id) return '#gone:' .. id end

  -- Schedule `id`'s record as the scripts reply it: the id, then the slots in order (body false
  -- when `withBody` is not set), then BY and KEY. Mirrored by ScheduleView in lib/engine/scripts.ts.
  local function scheduleView(id, r, withBody)
    local body = false
    if withBody then body = r[S_BODY] end
    return { id, r[S_VERSION], r[S_NEXT], r[S_NEXT_ID], r[S_LAST], r[S_MAX], r[S_TTR], r[S_BACKOFF], r[S_URL], r[S_GROUP],
      r[S_CREATED], r[S_UPDATED], r[S_SPEC], body, r[S_BY] or false, r[S_KEY] or false }
  end

  Schedules.S_VERSION, Schedules.S_NEXT, Schedules.S_NEXT_ID, Schedules.S_LAST = S_VERSION, S_NEXT, S_NEXT_ID, S_LAST
  Schedules.S_MAX, Schedules.S_TTR, Schedules.S_BACKOFF, Schedules.S_URL = S_MAX, S_TTR, S_BACKOFF, S_URL
  Schedules.S_GROUP, Schedules.S_CREATED, Schedules.S_UPDATED = S_GROUP, S_CREATED, S_UPDATED
  Schedules.S_SPEC, Schedules.S_BODY, Schedules.S_LAST_ID, Schedules.S_BY = S_SPEC, S_BODY, S_LAST_ID, S_BY
  Schedules.S_KEY, Schedules.MOVE, Schedules.scheduleView = S_KEY, MOVE, scheduleView
end
