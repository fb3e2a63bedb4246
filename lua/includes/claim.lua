--[[
  One ready job claimed for an attempt (lua/claimJobs-7.lua, lua/claimFlow-6.lua): the checks a
  ready id passes before its claim, and the claim itself.
]]
--- @include "codes"
--- @include "job"
--- @include "groupCancel"
local Claim = {}
do
  local RUNNING = Codes.RUNNING
  local H_STATE, H_RUN_AT, H_ATTEMPTS, H_MAX, H_TTR = Job.H_STATE, Job.H_RUN_AT, Job.H_ATTEMPTS, Job.H_MAX, Job.H_TTR
  local H_URL, H_UPDATED, H_DEADLINE, H_CLAIM = Job.H_URL, Job.H_UPDATED, Job.H_DEADLINE, Job.H_CLAIM
  local H_STARTED, H_GIVE_BACKS, H_VERSION, H_GROUP = Job.H_STARTED, Job.H_GIVE_BACKS, Job.H_VERSION, Job.H_GROUP
  local H_TRACE = Job.H_TRACE
  local save = Job.save
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
  -- the claim) also starts it and appends its lateness. `k`: jobs, running. Returns the reply item
  -- { id, attempt, runAt, deadline, url, body or false, maxAttempts, claim[, trace] } (the trace
  -- context, H_TRACE, only when the job has one: a job without costs nothing more).
  local function claimOne(k, id, h, inline, now, ttrMs, claim, late)
    local deadline = now + (h[H_TTR] or ttrMs)
    h[H_ATTEMPTS] = h[H_ATTEMPTS] + 1
    h[H_STATE], h[H_UPDATED], h[H_DEADLINE] = RUNNING, now, deadline
    h[H_CLAIM], h[H_STARTED] = claim, false
    if late then
      h[H_STARTED], h[H_GIVE_BACKS] = now, 0
      late[#late + 1] = now - h[H_RUN_AT]
    end
    save(k.jobs, id, h, inline)
    redis.call('ZADD', k.running, string.format('%d', deadline), id) -- (a number argument costs a '%.17g')
    local item = { id, h[H_ATTEMPTS], h[H_RUN_AT], deadline, h[H_URL], inline, h[H_MAX], h[H_CLAIM] }
    local trace = h[H_TRACE]
    if trace then item[9] = trace end
    return item
  end

  Claim.cancelledWithGroup, Claim.claimOne = cancelledWithGroup, claimOne
end
