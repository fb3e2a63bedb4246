--[[
  Lists ready jobs of one topic and partition in claim order (lua/claimJobs-7.lua): the prioritized
  ids above 0 (includes/priority.lua), highest first, then the ready list, then the prioritized ids
  below 0, from a place in that order that claims do not move:
    'P<score>' (or 'P': the first) the prioritized zset from that score, above 0;
    '<place>' the ready list from that place in its history (counted from the ids ever pushed to its
      tail, READY_TAIL_FIELD; a place before the head: the head);
    'N<score>' (or 'N': the first) the prioritized zset from that score, below 0;
    '' the start: 'P', or the ready list's head when the partition holds no prioritized id.
  A page resumes after the last id it looked at whatever claims took off the heads in between (a
  give-back goes before them: it is not listed again). Ids that are not ready jobs (cancelled,
  rescheduled, the ready list's mark of prioritized ids: claim skips them) and ids already listed
  on this page are passed over. Replies a body only when it is inline (the caller reads the bodies
  kept apart with a plain HMGET). Stops before the job whose record and body would pass the byte
  budget (never before the first).
  KEYS[1] ready list  KEYS[2] jobs hash  KEYS[3] bodies hash  KEYS[4] delayed zset
  ARGV[1] place to start at (above), or ''  ARGV[2] limit (ids looked at, all parts together)
  ARGV[3] byte budget  ARGV[4] lowest and ARGV[5] highest due time listed (ms), or '' for no bound
  Returns { more 0|1, next, view, after, view, after... } where next is the place after the last id
  looked at (the next page starts there), each after the place right after its job (a page the
  caller cuts short resumes there), and more = 1 when ids may be left after next.
  Mirrored by ListReadyReply in lib/engine/scripts.ts.
]]
--- @include "codes"
--- @include "argv"
--- @include "budget"
--- @include "job"
--- @include "priority"
local readyKey, jobsKey, bodiesKey, delayedKey = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local PENDING, H_STATE, H_KEY, H_RUN_AT, H_PRIORITY = Codes.PENDING, Job.H_STATE, Job.H_KEY, Job.H_RUN_AT, Job.H_PRIORITY
local limit = tonumber(ARGV[2])
local budget = Budget.byteBudget(tonumber(ARGV[3]))
local from, to = Argv.optionalNumber(ARGV[4]), Argv.optionalNumber(ARGV[5])
local part, at = string.match(ARGV[1], '^([PN]?)(%-?%d*)$')
at = tonumber(at)
local count = tonumber(redis.call('HGET', jobsKey, Priority.COUNT_FIELD) or 0)
if ARGV[1] == '' then part = count > 0 and 'P' or '' end
local result = { 1, part .. (at and string.format('%d', at) or '') }
local looked, seen, stopped = 0, {}, false

-- Looks at id `id` (`prioritized`: of the zset; false: of the ready list while the zset holds ids,
-- where an id with a priority is not claimed; nil: neither), `after` the place after it. False when
-- the budget stops the page before it.
local function visit(id, after, prioritized)
  local record = id ~= Priority.PRIO_MARK and redis.call('HGET', jobsKey, id)
  local h, inline
  if record then h, inline = Job.decode(record) end
  local ready = h and not seen[id] and h[H_STATE] == PENDING and not redis.call('ZSCORE', delayedKey, Job.delayedMember(id, h[H_KEY], h[H_PRIORITY]))
  if ready and prioritized ~= nil and ((h[H_PRIORITY] or 0) ~= 0) ~= prioritized then ready = false end
  if ready and ((from and h[H_RUN_AT] < from) or (to and h[H_RUN_AT] > to)) then ready = false end
  if ready then
    if not Job.fitsListing(budget, bodiesKey, id, record, inline) then return false end
    seen[id] = true
    result[#result + 1] = Job.view(jobsKey, delayedKey, id, h, inline)
    result[#result + 1] = after
  end
  looked = looked + 1
  result[2] = after
  return true
end

-- The prioritized ids above 0 (`tag` 'P') or below it ('N') from score `at` (nil: the first). True
-- when the page went through all of them.
local function zsetPart(tag)
  local wanted = limit - looked
  local items = Priority.fromScore(jobsKey, tag == 'P', at, wanted)
  for i = 1, #items, 2 do
    if not visit(items[i], tag .. string.format('%d', tonumber(items[i + 1]) + 1), true) then
      stopped = true
      return false
    end
  end
  return #items / 2 < wanted
end

-- The ready list from place `at` (nil: its head). True when the page reached its end.
local function listPart()
  local head = tonumber(redis.call('HGET', jobsKey, Job.READY_TAIL_FIELD) or 0) - redis.call('LLEN', readyKey)
  local place = math.max(at or head, head)
  result[2] = string.format('%d', place)
  local wanted = limit - looked
  local ids = redis.call('LRANGE', readyKey, place - head, place - head + wanted - 1)
  local prioritized = nil
  if count > 0 then prioritized = false end
  for i, id in ipairs(ids) do
    if not visit(id, string.format('%d', place + i), prioritized) then
      stopped = true
      return false
    end
  end
  return #ids < wanted
end

if part == 'P' and (count == 0 or zsetPart('P')) then part, at = '', nil end
if part == '' and not stopped and looked < limit and listPart() then part, at = 'N', nil end
if part == 'N' and not stopped and looked < limit then
  if at == nil then result[2] = 'N' end
  if count == 0 or zsetPart('N') then result[1] = 0 end
end
return result
