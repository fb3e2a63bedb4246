--[[
  Cancels a pending or running job. A ready job's id stays in its ready list and is skipped by
  claim (no LREM); a running job leaves the running zset, so its ack, fail and TTR expiry are
  dropped. Rewrites the record's header only, or deletes record and body; reads the one body for
  the reply.
  KEYS[1] jobs hash  KEYS[2] bodies hash  KEYS[3] delayed zset  KEYS[4] running zset
  KEYS[5] done zset
  ARGV[1] fixed clock ms or ''  ARGV[2] id  ARGV[3] retention ms (how long the cancelled job
          stays readable; 0 deletes it now)
  Returns { OUTCOME.CANCELLED, view }, { OUTCOME.ALREADY_CANCELLED, view },
          { REFUSAL.NOT_FOUND }, { REFUSAL.JOB_FINISHED, view } (done or dead: nothing changed)
  Mirrored by CancelReply in lib/engine/scripts.ts.
]]
local jobsKey, bodiesKey, delayedKey, runningKey, doneKey = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local now, id, retention = clock(ARGV[1]), ARGV[2], tonumber(ARGV[3])
local record = redis.call('HGET', jobsKey, id)
if not record then return { REFUSAL.NOT_FOUND } end
local h, inline = decode(record)
local body = loadBody(bodiesKey, id, inline)
local state = h[H_STATE]
if state == CANCELLED then return { OUTCOME.ALREADY_CANCELLED, view(delayedKey, id, h, body) } end
if state == DONE or state == DEAD then return { REFUSAL.JOB_FINISHED, view(delayedKey, id, h, body) } end

redis.call('ZREM', delayedKey, id)
redis.call('ZREM', runningKey, id)
h[H_STATE], h[H_UPDATED], h[H_DEADLINE] = CANCELLED, now, false
local result = view(delayedKey, id, h, body)
if retention > 0 then
  save(jobsKey, bodiesKey, id, h, inline)
  redis.call('ZADD', doneKey, now + retention, id)
else
  remove(jobsKey, bodiesKey, id)
end
return { OUTCOME.CANCELLED, result }
