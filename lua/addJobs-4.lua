--[[
  Adds jobs of one topic and partition, or (mode 'put') creates-or-replaces them.
  KEYS[1] jobs hash  KEYS[2] bodies hash  KEYS[3] delayed zset  KEYS[4] done zset (retention of
          finished jobs)
  ARGV[1] fixed clock ms or ''  ARGV[2] 'add' | 'put'
  ARGV[3] byte budget: the bodies written and the records and bodies read for replies stop at it
          (the first job is always done); the caller sends the jobs left in another call
  ARGV[4..] 8 per job: id, 'd' (delay ms) | 'a' (absolute ms), ms, maxAttempts|'', ttrMs|'',
            backoff spec|'', url|'', body
  Returns { headChanged 0|1, results... } with one result per job done, in order (fewer results
  than jobs: the budget was reached, the rest were not looked at):
    { OUTCOME.CREATED, id, runAt, createdAt }  add; put of a new or cancelled job
    { OUTCOME.REPLACED, view }                 put of a pending job: runAt, body and options; the
                                               view's body is '' (it is the one the caller sent)
    { REFUSAL.JOB_EXISTS, view }               add of an existing id: nothing changed
    { REFUSAL.JOB_FINISHED, view }             put of a running, done or dead job: nothing changed
  Mirrored by AddJobsReply in lib/engine/scripts.ts.
]]
local jobsKey, bodiesKey, delayedKey, doneKey = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local now = clock(ARGV[1])
local put = ARGV[2] == 'put'
local budget = byteBudget(tonumber(ARGV[3]))
local headBefore = headScore(delayedKey)
local results = {}

for i = 4, #ARGV, 8 do
  local id, whenKind, whenMs = ARGV[i], ARGV[i + 1], tonumber(ARGV[i + 2])
  local due = whenMs
  if whenKind == 'd' then due = now + whenMs end
  local max, ttr, backoff, url, body =
    optionalNumber(ARGV[i + 3]), optionalNumber(ARGV[i + 4]), optional(ARGV[i + 5]), optional(ARGV[i + 6]), ARGV[i + 7]

  local record = redis.call('HGET', jobsKey, id)
  if not record then
    if not budget.fits(#body) then break end
    budget.spend(#body)
    store(jobsKey, bodiesKey, id, { PENDING, due, now, 0, max, ttr, backoff, url, false, now, false }, body, false)
    redis.call('ZADD', delayedKey, due, id)
    results[#results + 1] = { OUTCOME.CREATED, id, due, now }
  else
    local h, inline = decode(record)
    local state = h[H_STATE]
    if put and (state == PENDING or state == CANCELLED) then
      if not budget.fits(#record + #body) then break end
      budget.spend(#record + #body)
      local code = OUTCOME.REPLACED
      if state == CANCELLED then
        code = OUTCOME.CREATED
        h = { PENDING, due, now, 0, max, ttr, backoff, url, false, now, false }
        redis.call('ZREM', doneKey, id)
      else
        h[H_RUN_AT], h[H_MAX], h[H_TTR], h[H_BACKOFF], h[H_URL], h[H_UPDATED] = due, max, ttr, backoff, url, now
      end
      store(jobsKey, bodiesKey, id, h, body, true)
      redis.call('ZADD', delayedKey, due, id)
      if code == OUTCOME.CREATED then
        results[#results + 1] = { OUTCOME.CREATED, id, due, now }
      else
        results[#results + 1] = { OUTCOME.REPLACED, view(delayedKey, id, h, '') }
      end
    else
      -- refused: the reply carries the job as it stands, body included
      local size = #record + bodySize(bodiesKey, id, inline)
      if not budget.fits(size) then break end
      budget.spend(size)
      local code = REFUSAL.JOB_FINISHED
      if not put then code = REFUSAL.JOB_EXISTS end
      results[#results + 1] = { code, view(delayedKey, id, h, loadBody(bodiesKey, id, inline)) }
    end
  end
end

local headAfter = headScore(delayedKey)
local headChanged = 0
if headAfter and (not headBefore or headAfter < headBefore) then headChanged = 1 end
return { headChanged, unpack(results) }
