--[[
  One ready job claimed for an attempt (lua/claimJobs-7.lua, lua/claimFlow-6.lua): the checks a
  ready id passes before its claim, and the claim itself.
]]
--- @include "codes"
--- @include "job"
--- @include "groupCancel"
--- @include "cancel"
local Claim = {}
do
  local RUNNING = Codes.RUNNING
  local H_STATE, H_RUN_AT, H_ATTEMPTS, H_MAX, H_TTR = Job.H_STATE, Job.H_RUN_AT, Job.H_ATTEMPTS, Job.H_MAX, Job.H_TTR
  local H_URL, H_UPDATED, H_DEADLINE, H_CLAIM = Job.H_URL, Job.H_UPDATED, Job.H_DEADLINE, Job.H_CLAIM
  local H_STARTED, H_GIVE_BACKS, H_VERSION, H_GROUP = Job.H_STARTED, Job.H_GIVE_BACKS, Job.H_VERSION, Job.H_GROUP
  local H_TRACE, H_KEY, H_PRIORITY, H_ERROR, H_EXPIRES = Job.H_TRACE, Job.H_KEY, Job.H_PRIORITY, Job.H_ERROR, Job.H_EXPIRES
  local PENDING = Codes.PENDING
  local save, decode, delayedMember, bodySize = Job.save, Job.decode, Job.delayedMember, Job.bodySize
  local cancelNow, expireNow, groupCancelError = Cancel.cancelNow, Cancel.expireNow, GroupCancel.groupCancelError
  local GROUP_CANCEL_FIELD = GroupCancel.GROUP_CANCEL_FIELD

  -- The version at which a cancel of the group of the job with header `h` began, when one is under
  -- way and the job has not changed since: it must not start. False otherwise.
  local function cancelledWithGroup(jobsKey, h)
    if not h[H_GROUP] then return false end
    local mark = redis.call('HGET', jobsKey, GROUP_CANCEL_FIELD .. h[H_GROUP])
    if mark and h[H_VERSION] < tonumber(mark) then return mark end
    return false
  end

  -- Claims ready job `id` (header `h`, body `inline`) for an attempt: counts it, sets its deadline
  -- (its ttr, else `ttrMs`) and claim token, adds it to the running zset; with `late` (a start with
  -- the claim) also starts it and appends its lateness, in jobs hash `jobsKey` and running zset
  -- `runningKey`. Returns the reply item
  -- { id, attempt, runAt, deadline, url, body or false, maxAttempts, claim[, trace] } (the trace
  -- context, H_TRACE, only when the job has one: a job without costs nothing more).
  local function claimOne(jobsKey, runningKey, id, h, inline, now, ttrMs, claim, late)
    local deadline = now + (h[H_TTR] or ttrMs)
    h[H_ATTEMPTS] = h[H_ATTEMPTS] + 1
    h[H_STATE], h[H_UPDATED], h[H_DEADLINE] = RUNNING, now, deadline
    h[H_CLAIM], h[H_STARTED] = claim, false
    if late then
      h[H_STARTED], h[H_GIVE_BACKS] = now, 0
      late[#late + 1] = now - h[H_RUN_AT]
    end
    save(jobsKey, id, h, inline)
    redis.call('ZADD', runningKey, string.format('%d', deadline), id) -- (a number argument costs a '%.17g')
    local item = { id, h[H_ATTEMPTS], h[H_RUN_AT], deadline, h[H_URL], inline, h[H_MAX], h[H_CLAIM] }
    local trace = h[H_TRACE]
    if trace then item[9] = trace end
    return item
  end

  -- Looks at ready id `id` (record `record`, or false) as a claim's `i`th id: cancels it (its group
  -- is being cancelled), skips it (gone, no longer ready) or claims it (expires it instead when the
  -- claim starts what it claims and the job's expiry has come), in the claim's reply. `c`: the
  -- claim's state, { k (jobs, bodies, delayed, running, done), result, late (a start with the claim,
  -- else false), budget, now, retention, ttrMs, nonce }: reply slots 3 (skipped), 4 (more), 7
  -- (expired), then the items. `prioritized`: true for an id of a prioritized zset, false for one
  -- of a ready list while such a zset holds ids (a job with a priority is claimed from the zset), nil
  -- otherwise. False when the budget stops the claim before it.
  local function visitReady(c, id, record, i, prioritized)
    local h, inline
    if record then h, inline = decode(record) end
    local k, result = c.k, c.result
    local live = h and h[H_STATE] == PENDING and not redis.call('ZSCORE', k.delayed, delayedMember(id, h[H_KEY], h[H_PRIORITY]))
    if live and prioritized ~= nil and (h[H_PRIORITY] and true or false) ~= prioritized then live = false end
    local mark = live and cancelledWithGroup(k.jobs, h)
    if mark then
      if not c.budget.take(#record) then result[4] = 1 return false end
      h[H_ERROR] = groupCancelError(mark)
      cancelNow(k, id, h, inline, c.now, c.retention)
      result[3] = result[3] + 1
    elseif not live then
      if not c.budget.take(record and #record or 0) then result[4] = 1 return false end
      result[3] = result[3] + 1
    else
      if not c.budget.take(#record + bodySize(k.bodies, id, inline)) then result[4] = 1 return false end
      if c.late and h[H_EXPIRES] and h[H_EXPIRES] <= c.now then
        expireNow(k, id, h, inline, c.now, c.retention)
        result[3], result[7] = result[3] + 1, result[7] + 1
      else
        result[#result + 1] = claimOne(k.jobs, k.running, id, h, inline, c.now, c.ttrMs, string.format('%s.%d', c.nonce, i), c.late)
      end
    end
    return true
  end

  Claim.cancelledWithGroup, Claim.claimOne, Claim.visitReady = cancelledWithGroup, claimOne, visitReady
end
