--[[
  Lists ready jobs of one topic and partition in queue order (the order claims take them), from a
  place in the ready list's history (counted from the ids ever pushed to its tail, READY_TAIL_FIELD),
  so a page resumes after the last id it looked at whatever claims took off the head in between. Ids that are not ready jobs (cancelled, rescheduled: claim skips
  them) and ids already listed on this page are passed over. Replies a body only when it is
  inline (the caller reads the bodies kept apart with a plain HMGET). Stops before the job whose
  record and body would pass the byte budget (never before the first).
  KEYS[1] ready list  KEYS[2] jobs hash  KEYS[3] bodies hash  KEYS[4] delayed zset
  ARGV[1] place to start at, or '' for the head  ARGV[2] limit (ids looked at)  ARGV[3] byte budget
  ARGV[4] lowest and ARGV[5] highest due time listed (ms), or '' for no bound
  Returns { more 0|1, at, looked, view... } where at is the place of the first id looked at (the
  start, or the head when claims took the start away), looked counts the ids looked at (the next
  page starts that much further) and more = 1 when ids may be left after them.
  Mirrored by ListReadyReply in lib/engine/scripts.ts.
]]
--- @include "codes"
--- @include "argv"
--- @include "budget"
--- @include "job"
local readyKey, jobsKey, bodiesKey, delayedKey = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local head = tonumber(redis.call('HGET', jobsKey, Job.READY_TAIL_FIELD) or 0) - redis.call('LLEN', readyKey)
local at = math.max(ARGV[1] == '' and head or tonumber(ARGV[1]), head)
local start, limit = at - head, tonumber(ARGV[2])
local budget = Budget.byteBudget(tonumber(ARGV[3]))
local from, to = Argv.optionalNumber(ARGV[4]), Argv.optionalNumber(ARGV[5])
local ids = redis.call('LRANGE', readyKey, start, start + limit - 1)
local result = { 0, at, 0 }
if #ids == limit then result[1] = 1 end
local seen = {}
for i, id in ipairs(ids) do
  local record = redis.call('HGET', jobsKey, id)
  local h, inline
  if record then h, inline = Job.decode(record) end
  local ready = h and not seen[id] and h[Job.H_STATE] == Codes.PENDING and not redis.call('ZSCORE', delayedKey, Job.delayedMember(id, h[Job.H_KEY], h[Job.H_PRIORITY]))
  if ready and ((from and h[Job.H_RUN_AT] < from) or (to and h[Job.H_RUN_AT] > to)) then ready = false end
  if ready then
    if not Job.fitsListing(budget, bodiesKey, id, record, inline) then
      result[1] = 1
      break
    end
    seen[id] = true
    result[#result + 1] = Job.view(delayedKey, id, h, inline)
  end
  result[3] = i
end
return result
