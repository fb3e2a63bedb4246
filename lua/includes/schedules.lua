--[[
  Schedule records (lua/*Schedule*.lua): in the schedules hash, per schedule id, a msgpack array
  in these slots. The version comes from the hash's counter (SEQ_FIELD, see includes/job.lua), as
  a job's does. NEXT and NEXT_ID: the pending occurrence's time and job id (false: paused, or no
  run left). LAST: the latest occurrence handed over (due, so left to run, or skipped). MAX..GROUP:
  each occurrence's options, as a job header holds them. SPEC: the definition as
  lib/engine/schedules.ts writes it (JSON, opaque here). BODY: each occurrence's body (JSON text).
  LAST_ID: the job id of the occurrence handed over last (false: none yet), which its jitter may
  still hold back; not in the view. BY: the name of the API key that last put it (false: none).
  KEY: the flow key each occurrence carries (false: none, so on a flow topic the key '', as a job
  added without one).
]]
local S_VERSION, S_NEXT, S_NEXT_ID, S_LAST, S_MAX, S_TTR, S_BACKOFF, S_URL, S_GROUP, S_CREATED, S_UPDATED, S_SPEC, S_BODY =
  1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13
local S_LAST_ID, S_BY, S_KEY = 14, 15, 16

-- Schedule `id`'s record as the scripts reply it: the id, then the slots in order (body false
-- when `withBody` is not set), then BY and KEY. Mirrored by ScheduleView in lib/engine/scripts.ts.
local function scheduleView(id, r, withBody)
  local body = false
  if withBody then body = r[S_BODY] end
  return { id, r[S_VERSION], r[S_NEXT], r[S_NEXT_ID], r[S_LAST], r[S_MAX], r[S_TTR], r[S_BACKOFF], r[S_URL], r[S_GROUP],
    r[S_CREATED], r[S_UPDATED], r[S_SPEC], body, r[S_BY] or false, r[S_KEY] or false }
end
