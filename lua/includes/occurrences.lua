--[[
  A schedule's occurrences: the jobs lua/putSchedule-9.lua and lua/advanceSchedule-8.lua create.
]]
--- @include "codes"
--- @include "job"
--- @include "groups"
--- @include "schedules"
local Occurrences = {}
do
  local PENDING, CANCELLED = Codes.PENDING, Codes.CANCELLED
  local H_STATE, H_KEY, H_RUN_AT, H_ATTEMPTS = Job.H_STATE, Job.H_KEY, Job.H_RUN_AT, Job.H_ATTEMPTS
  local H_UPDATED, H_GROUP, H_CHUNK, decode = Job.H_UPDATED, Job.H_GROUP, Job.H_CHUNK, Job.decode
  local delayedMember, save, store, setExpiry = Job.delayedMember, Job.save, Job.store, Job.setExpiry
  local setPriority, setTrace = Job.setPriority, Job.setTrace
  local placeInGroup, addToGroup = Groups.placeInGroup, Groups.addToGroup
  local S_MAX, S_TTR, S_BACKOFF, S_URL = Schedules.S_MAX, Schedules.S_TTR, Schedules.S_BACKOFF, Schedules.S_URL
  local S_GROUP, S_LAST_ID, S_KEY, S_SPEC = Schedules.S_GROUP, Schedules.S_LAST_ID, Schedules.S_KEY, Schedules.S_SPEC

  -- Creates job `id` due at `due` with options `o` ({ max, ttr, backoff, url, group }, false:
  -- the topic's; key: its flow key, false for none; expireAfter: ms after `due` from which no
  -- attempt of it starts (H_EXPIRES), false for none; priority, false for none; traceLink: the packed
  -- trace context its attempts link to, false for none) and body `body`, as lua/addJobs-5.lua adds one, joining the group whose key is
  -- `groupKey` when it has a group; unless a job of that id exists that is not cancelled (a
  -- cancelled one is made anew; in the same group it keeps its place). `k`: jobs, bodies, delayed,
  -- done. Returns true when it created the job, and then, when it made anew a cancelled job of another
  -- group (or of a group when it has none now), { group, chunk } it left (false otherwise): that
  -- group's key is not the call's, so the caller takes the job out with lua/leaveGroup-2.lua.
  -- `prefetched`: job `id`'s record as the caller read it (false: none), or nil to read it here.
  local function createJob(k, groupKey, id, due, now, o, body, prefetched)
    local record = prefetched
    if record == nil then record = redis.call('HGET', k.jobs, id) end
    local old, oldChunk = false, nil
    if record then
      local h = decode(record)
      if h[H_STATE] ~= CANCELLED then return false end
      redis.call('ZREM', k.done, id)
      old, oldChunk = h[H_GROUP], h[H_CHUNK]
    end
    local h = { PENDING, o.key, due, now, 0, o.max, o.ttr, o.backoff, o.url, false, false, false, false, false, 0, 0, o.group, false }
    placeInGroup(k.jobs, groupKey, h, old, oldChunk)
    if o.expireAfter then setExpiry(h, due + o.expireAfter) end
    if o.priority then setPriority(h, o.priority) end
    -- 'L': a link, not a parent (lib/workers/handler.ts): each occurrence is a trace of its own
    if o.traceLink then setTrace(h, 'L' .. o.traceLink) end
    store(k.jobs, k.bodies, id, h, body, record ~= false)
    redis.call('ZADD', k.delayed, due, delayedMember(id, h[H_KEY], h[Job.H_PRIORITY]))
    addToGroup(k.jobs, groupKey, id, h)
    if old and old ~= h[H_GROUP] then return true, { old, oldChunk or 0 } end
    return true, false
  end

  -- Appends { id, group, chunk } to `lefts` when createJob (which made job `id`) says the job left a
  -- group; passes `created` on.
  local function noteLeft(lefts, id, created, left)
    if left then lefts[#lefts + 1] = { id, left[1], left[2] } end
    return created
  end

  -- What record `r`'s definition (S_SPEC, see includes/schedules.lua) gives each occurrence beyond the
  -- record's slots: its expiry (ms after its due time, expireAfterMs), its priority and the trace of
  -- the schedule's put to link (traceLink), each false for none. A definition with none of them is
  -- not decoded: the plain find costs such a schedule next to nothing.
  local function specExtras(r)
    local spec = r[S_SPEC]
    if type(spec) ~= 'string' or not string.find(spec, '"expireAfterMs"', 1, true)
      and not string.find(spec, '"priority"', 1, true) and not string.find(spec, '"traceLink"', 1, true) then
      return false, false, false
    end
    local d = cjson.decode(spec)
    return tonumber(d.expireAfterMs) or false, tonumber(d.priority) or false, type(d.traceLink) == 'string' and d.traceLink
  end

  -- The options record `r` gives each occurrence, as createJob takes them: its flow key too, so the
  -- sweep routes the occurrence to that key's lane (an occurrence without one, on a flow topic, goes
  -- to the key '', as includes/flow.lua reads a header's H_KEY false), its expiry, its priority and
  -- the trace to link.
  local function occurrenceOptions(r)
    local expireAfter, priority, traceLink = specExtras(r)
    return { max = r[S_MAX], ttr = r[S_TTR], backoff = r[S_BACKOFF], url = r[S_URL], group = r[S_GROUP], key = r[S_KEY] or false,
      expireAfter = expireAfter, priority = priority, traceLink = traceLink }
  end

  -- Records occurrence `id` as the one schedule record `r` hands over now. The one handed over before
  -- it, if its jitter still holds it back (pending, never attempted, due after `now`), falls due now,
  -- so a schedule never holds back more than one occurrence whatever its jitter (each occurrence's
  -- jitter is also kept within the time to its next run: lib/core/schedule.ts jitterWindowMs).
  -- Returns true when it made one fall due (the caller tells the sweeper), false otherwise.
  -- `k`: jobs, delayed.
  local function handOver(k, r, id, now)
    local before = r[S_LAST_ID]
    r[S_LAST_ID] = id
    if not before or before == id then return false end
    local record = redis.call('HGET', k.jobs, before)
    if not record then return false end
    local h, inline = decode(record)
    if h[H_STATE] ~= PENDING or h[H_ATTEMPTS] ~= 0 then return false end
    local member = delayedMember(before, h[H_KEY], h[Job.H_PRIORITY])
    local due = redis.call('ZSCORE', k.delayed, member)
    if not due or tonumber(due) <= now then return false end
    h[H_RUN_AT], h[H_UPDATED] = now, now
    save(k.jobs, before, h, inline)
    redis.call('ZADD', k.delayed, now, member)
    return true
  end

  Occurrences.createJob, Occurrences.noteLeft, Occurrences.occurrenceOptions = createJob, noteLeft, occurrenceOptions
  Occurrences.handOver = handOver
end
