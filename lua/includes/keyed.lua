--[[
  Keyed adds (lua/addJobs-5.lua): an add with a dedupe or a debounce key. The key's entry is a string
  key derived from the topic's jobs hash (so in its slot: the job's id starts with '<key>::', which
  places it in the key's partition, routingId in lib/engine/keys.ts; keyedEntryKey there names it):
    dedupe   '<jobs hash>#dd:<key>' = '<until ms> <id>', kept until the window ends (+ 1 s): while the
             script clock is before <until>, the key's job stands and an add of the key changes nothing.
    debounce '<jobs hash>#db:<key>' = '<id>', kept for the max wait (+ 1 s), which the job is never due
             after: while the job it names waits for its first attempt (pending, never attempted, its
             runAt after now), an add of the key folds into it.
  Each entry is judged on the script's clock; its expiry only frees the memory.
]]
--- @include "codes"
--- @include "job"
local Keyed = {}
do
  local PENDING = Codes.PENDING
  local H_STATE, H_RUN_AT, H_ATTEMPTS, decode = Job.H_STATE, Job.H_RUN_AT, Job.H_ATTEMPTS, Job.decode
  local save, store, INLINE_BODY_BYTES = Job.save, Job.store, Job.INLINE_BODY_BYTES

  -- Keyed spec `spec` as ARGV holds it ('D<window ms>:<key>' | 'B<period ms>:<max wait ms>:<key>') for
  -- jobs hash `jobsKey`: its entry's key name, its kind ('D' | 'B'), the dedupe window or debounce
  -- period (ms), and the debounce's max wait (ms).
  local function parse(jobsKey, spec)
    local kind = string.sub(spec, 1, 1)
    if kind == 'D' then
      local window, key = string.match(spec, '^D(%d+):(.*)$')
      return jobsKey .. '#dd:' .. key, kind, tonumber(window), nil
    end
    local period, maxWait, key = string.match(spec, '^B(%d+):(%d+):(.*)$')
    return jobsKey .. '#db:' .. key, kind, tonumber(period), tonumber(maxWait)
  end

  -- The job an add of entry `entry` (kind `kind`) meets at `now`: for a dedupe, the id of the job that
  -- stands within the window; for a debounce, the id, header, record size and inline body (false: kept
  -- apart) of the job that waits, not yet due. nil when the add creates its job.
  local function standing(jobsKey, entry, kind, now)
    local value = redis.call('GET', entry)
    if not value then return nil end
    if kind == 'D' then
      local untilMs, id = string.match(value, '^(%d+) (.*)$')
      if now < tonumber(untilMs) then return id end
      return nil
    end
    local record = redis.call('HGET', jobsKey, value)
    if not record then return nil end
    local h, inline = decode(record)
    -- waits for its first attempt (a job that started and waits for a retry is not folded into)
    if h[H_STATE] == PENDING and h[H_ATTEMPTS] == 0 and h[H_RUN_AT] > now then return value, h, #record, inline end
    return nil
  end

  -- Notes job `id`, just created at `now` by an add of entry `entry` (kind `kind`; `ms`: the dedupe
  -- window or the debounce's max wait), in the entry.
  local function note(entry, kind, ms, id, now)
    if kind == 'D' then
      redis.call('SET', entry, string.format('%d', now + ms) .. ' ' .. id, 'PX', ms + 1000)
    else
      redis.call('SET', entry, id, 'PX', ms + 1000)
    end
  end

  -- Rewrites job `id` of a debounce's fold (its header `h` changed; `inline`: its old inline body, or
  -- false) with body `body`: when the old body and the new are both inline, the record alone (no HDEL
  -- of a body kept apart that there is not).
  local function fold(jobsKey, bodiesKey, id, h, inline, body)
    if inline and #body <= INLINE_BODY_BYTES then
      save(jobsKey, id, h, body)
    else
      store(jobsKey, bodiesKey, id, h, body, true)
    end
  end

  Keyed.parse, Keyed.standing, Keyed.note, Keyed.fold = parse, standing, note, fold
end
