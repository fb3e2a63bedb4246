--[[
  Changes the due time and/or the body of a pending (delayed or ready) job.
  KEYS[1] jobs hash  KEYS[2] delayed zset
  ARGV[1] fixed clock ms or ''  ARGV[2] id  ARGV[3] 'd' (delay ms) | 'a' (absolute ms) | '' (keep)
  ARGV[4] ms  ARGV[5] '1' to replace the body | '0'  ARGV[6] body
  Returns { 1, headChanged 0|1, view } rescheduled, { -2 } NOT_FOUND,
          { -3, view } JOB_FINISHED (running, done, dead or cancelled: nothing changed)
]]
local jobsKey, delayedKey = KEYS[1], KEYS[2]
local now, id = clock(ARGV[1]), ARGV[2]
local record = redis.call('HGET', jobsKey, id)
if not record then return { -2 } end
local h, body = decode(record)
if h[H_STATE] ~= PENDING then return { -3, view(delayedKey, id, h, body) } end

if ARGV[5] == '1' then body = ARGV[6] end
h[H_UPDATED] = now
local headChanged = 0
if ARGV[3] ~= '' then
  local due = tonumber(ARGV[4])
  if ARGV[3] == 'd' then due = now + due end
  local headBefore = headScore(delayedKey)
  h[H_RUN_AT] = due
  -- A ready job goes back to delayed; its id left in the ready list is skipped by claim.
  redis.call('ZADD', delayedKey, due, id)
  if not headBefore or due < headBefore then headChanged = 1 end
end
redis.call('HSET', jobsKey, id, encode(h, body))
return { 1, headChanged, view(delayedKey, id, h, body) }
