--[[
  Adds jobs of one topic and partition, or (mode 'put') creates-or-replaces them.
  KEYS[1] jobs hash  KEYS[2] bodies hash  KEYS[3] delayed zset  KEYS[4] done zset (retention of
          finished jobs)  KEYS[5] the key of the jobs' group (its first zset; every job of one call
          has the same group, or none: then KEYS[5] is the empty group's key, never written)
  ARGV[1] fixed clock ms or ''  ARGV[2] 'add' | 'put'
  ARGV[3] byte budget: the bodies written and the records and bodies read for replies stop at it
          (the first job is always done); the caller sends the jobs left in another call
  ARGV[4] the name of the API key that sends the jobs, or '' (updatedBy)
  ARGV[5] '1': the topic is a flow topic (each job's flow key is stored, '' for none); '0': not
  ARGV[6] '' or, while the partition count changes and this is a partition of the former layout,
          the current count: the partition is closed from now on (MOVED_FIELD in the jobs hash)
  ARGV[7..] 12 per job: id, 'd' (delay ms) | 'a' (absolute ms), ms, maxAttempts|'', ttrMs|'',
            backoff spec|'', url|'', group|'', if-match ('' none, '*' any existing job, or the
            version the job must have; put only), flow key|'', extras, body.
            extras: '' for none, else '<expiry>|<priority>|<trace>|<callback>|<keyed>', each '' for
            none: expiry '<ms>' at epoch ms, '+<ms>' that long after the job's due time (H_EXPIRES);
            priority (H_PRIORITY); trace, the packed trace context of the request that added it
            (H_TRACE); callback, what to notify when it ends (H_CALLBACK, no '|'); keyed (add only) 'D<window ms>:<key>' a dedupe window, 'B<period ms>:<max
            wait ms>:<key>' a debounce, see "Keyed adds" below
  Keyed adds (includes/keyed.lua): a dedupe add whose key's job stands within its window changes
  nothing (OUTCOME.DUPLICATE); a debounce add whose key's job waits, not yet due, replaces its body
  and moves it to min(now + period, its creation + max wait) (OUTCOME.DEBOUNCED); any other keyed
  add creates its job (a debounce's due at now + period) and its key's entry names it.
  A job with a group joins the group's newest zset, after its members (see "Groups" in
  includes/groups.lua; a job already in the group keeps its place). A job a put moves
  out of its group is not taken out of the old group's zset here (its key is not this call's): the
  reply names the group and the chunk it left, and the caller calls lua/leaveGroup-2.lua.
  Returns { headChanged 0|1, now, results... }: now is when the jobs created were created (ms);
  then four slots per job done, in order (results for fewer jobs than were sent: the budget was
  reached, the rest were not looked at), flat (a table a job costs Redis more to build and to
  reply than its contents):
    OUTCOME.CREATED, runAt, version, left      add; put of a new or cancelled job (left: { group,
                                               chunk } the job left, or false)
    OUTCOME.REPLACED, view, left, false        put of a pending job: runAt, body, group and
                                               options; the view's body is '' (it is the one the
                                               caller sent)
    OUTCOME.DUPLICATE, view or false, id, false
                                               dedupe add within the window: nothing changed; the
                                               job that stands (false: its record is gone) and its id
    OUTCOME.DEBOUNCED, view, false, false      debounce add folded into the job that waits: its
                                               body and runAt replaced; the view's body is ''
    REFUSAL.JOB_EXISTS, view, false, false     add of an existing id: nothing changed
    REFUSAL.JOB_FINISHED, view, false, false   put of a running, done or dead job: nothing changed
    REFUSAL.VERSION_MISMATCH, view or false, false, false
                                               put whose if-match failed: nothing changed
    RELAYOUT.MOVED, count, false, false        an id this partition does not hold, while it is
                                               closed (ARGV[6] now or before: a former layout's
                                               partition): nothing changed; the caller writes it
                                               in the current layout of `count` partitions
  Mirrored by AddJobsReply in lib/engine/scripts.ts.
]]
--- @include "codes"
--- @include "clock"
--- @include "argv"
--- @include "head"
--- @include "job"
--- @include "groups"
--- @include "keyed"
-- what the includes give that the call uses for each job, as locals (a table lookup fewer a use)
local PENDING, CANCELLED, REFUSAL, RELAYOUT = Codes.PENDING, Codes.CANCELLED, Codes.REFUSAL, Codes.RELAYOUT
local MOVED_FIELD, OUTCOME = Codes.MOVED_FIELD, Codes.OUTCOME
local optional, optionalNumber = Argv.optional, Argv.optionalNumber
local H_STATE, H_KEY, H_RUN_AT, H_MAX, H_TTR = Job.H_STATE, Job.H_KEY, Job.H_RUN_AT, Job.H_MAX, Job.H_TTR
local H_BACKOFF, H_URL, H_UPDATED, H_VERSION = Job.H_BACKOFF, Job.H_URL, Job.H_UPDATED, Job.H_VERSION
local H_GROUP, H_BY, H_CHUNK, decode = Job.H_GROUP, Job.H_BY, Job.H_CHUNK, Job.decode
local delayedMember, loadBody, bodySize, seqOf = Job.delayedMember, Job.loadBody, Job.bodySize, Job.seqOf
local store, view, matches, setExpiry, H_EXPIRES = Job.store, Job.view, Job.matches, Job.setExpiry, Job.H_EXPIRES
local setPriority, H_PRIORITY, H_CREATED, setTrace = Job.setPriority, Job.H_PRIORITY, Job.H_CREATED, Job.setTrace
local setCallback, H_CALLBACK, byRef, byField = Job.setCallback, Job.H_CALLBACK, Job.byRef, Job.byField
local placeInGroup, addToGroup = Groups.placeInGroup, Groups.addToGroup
local jobsKey, bodiesKey, delayedKey, doneKey, groupKey = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local now = Clock.clock(ARGV[1])
local put = ARGV[2] == 'put'
-- the byte budget (Budget.byteBudget's rule, not strict, counted inline: a table and a closure
-- fewer a call): bytes counted, jobs counted; the first job always fits
local budget, budgetUsed, budgetJobs = ARGV[3] + 0, 0, 0 -- (+ 0 parses once; tonumber twice)
-- the API key's name, and its number in the jobs hash (H_BY), nil until a job stored needs it
local by = optional(ARGV[4])
local byNumber
local flow = ARGV[5] == '1'
-- the count the partition is closed to (MOVED_FIELD), false when it is open: set by this call
-- (ARGV[6]), or read with SEQ_FIELD when the call first meets an id the partition does not hold
-- (seqOf: the version of a job created reads SEQ_FIELD anyway); nil until then
local moved
if ARGV[6] ~= '' then
  redis.call('HSET', jobsKey, MOVED_FIELD, ARGV[6])
  moved = tonumber(ARGV[6])
end
-- The head before the call, and the earliest due time the call gives a delayed member (false: none):
-- the head moved earlier exactly when that is before it (a member the call moves later only raises
-- the head's score), so the head is read once, not again at the end.
local headBefore, earliest = Head.headScore(delayedKey), false
-- headChanged set at the end; then each job's result, its four slots (code, a, b, c) appended at
-- results[n + 1 .. n + 4], n = #results (no closure made a call for it)
local results = { 0, now }

for i = 7, #ARGV, 12 do
  local id, whenKind, whenMs = ARGV[i], ARGV[i + 1], ARGV[i + 2] + 0
  local due = whenMs
  if whenKind == 'd' then due = now + whenMs end
  local max, ttr, backoff, url, group, ifMatch, key, body =
    optionalNumber(ARGV[i + 3]), optionalNumber(ARGV[i + 4]), optional(ARGV[i + 5]), optional(ARGV[i + 6]),
    optional(ARGV[i + 7]), ARGV[i + 8], flow and ARGV[i + 9], ARGV[i + 11]
  local spec, priority, trace, callback, keyed = '', false, false, false, ''
  local extras = ARGV[i + 10]
  if extras ~= '' then
    local p, t, c
    spec, p, t, c, keyed = string.match(extras, '^([^|]*)|([^|]*)|([^|]*)|([^|]*)|(.*)$')
    priority, trace, callback = optionalNumber(p), optional(t), optional(c)
  end
  local entry, kind, window, maxWait, standingId, sh, sSize, sInline
  if keyed ~= '' then
    entry, kind, window, maxWait = Keyed.parse(jobsKey, keyed)
    standingId, sh, sSize, sInline = Keyed.standing(jobsKey, entry, kind, now)
    if kind == 'B' and not standingId then due = now + window end
  end
  -- the expiry `spec` (ARGV, not ''): epoch ms, or '+<ms>' after the job's due time
  local expires = false
  if spec ~= '' then
    if string.sub(spec, 1, 1) == '+' then expires = due + tonumber(string.sub(spec, 2)) else expires = tonumber(spec) end
  end

  if standingId and kind == 'D' then
    -- a duplicate within the window: the job that stands, as it stands (its body included)
    local r = redis.call('HGET', jobsKey, standingId)
    local size = 0
    local sv, vh, vInline = false, nil, nil
    if r then
      vh, vInline = decode(r)
      size = #r + bodySize(bodiesKey, standingId, vInline)
    end
    if budgetJobs > 0 and budgetUsed + size > budget then break end
    budgetUsed, budgetJobs = budgetUsed + size, budgetJobs + 1
    if r then sv = view(jobsKey, delayedKey, standingId, vh, loadBody(bodiesKey, standingId, vInline)) end
    local n = #results
    results[n + 1], results[n + 2], results[n + 3], results[n + 4] = OUTCOME.DUPLICATE, sv, standingId, false
  elseif standingId then
    -- a debounce folded into the job that waits: last body wins, due at now + period, not past max wait
    if budgetJobs > 0 and budgetUsed + sSize + #body > budget then break end
    budgetUsed, budgetJobs = budgetUsed + sSize + #body, budgetJobs + 1
    local at = math.min(now + window, sh[H_CREATED] + maxWait)
    if at < now then at = now end
    if byNumber == nil then byNumber = byRef(jobsKey, by) end
    sh[H_RUN_AT], sh[H_UPDATED], sh[H_BY] = at, now, byNumber
    if spec ~= '' then
      if string.sub(spec, 1, 1) == '+' then setExpiry(sh, at + tonumber(string.sub(spec, 2))) else setExpiry(sh, tonumber(spec)) end
    end
    Keyed.fold(jobsKey, bodiesKey, standingId, sh, sInline, body)
    redis.call('ZADD', delayedKey, string.format('%d', at), delayedMember(standingId, sh[H_KEY], sh[H_PRIORITY]))
    if not earliest or at < earliest then earliest = at end
    local n = #results
    results[n + 1], results[n + 2], results[n + 3], results[n + 4] = OUTCOME.DEBOUNCED, view(jobsKey, delayedKey, standingId, sh, ''), false, false
  else
    -- a plain add (no put, group or key) of an id the open partition does not hold: its record is
    -- written with HSETNX, and read only when the id is taken (one HGET fewer an add); any other
    -- write reads the record first
    local onlyNew = not put and not group and keyed == ''
    local record = false
    if not onlyNew then record = redis.call('HGET', jobsKey, id) end
    if not record and moved == nil then
      -- the closing mark, and the key's number when it has a name (with SEQ_FIELD: one request)
      if by and byNumber == nil then
        local _, mark, ref = seqOf(jobsKey, MOVED_FIELD, byField(by))
        moved, byNumber = tonumber(mark) or false, byRef(jobsKey, by, ref)
      else
        local _, mark = seqOf(jobsKey, MOVED_FIELD)
        moved = tonumber(mark) or false
      end
    end
    -- a closed partition answers MOVED only for an id it does not hold
    if onlyNew and moved then record = redis.call('HGET', jobsKey, id) end
    if not record and moved then
      local n = #results
      results[n + 1], results[n + 2], results[n + 3], results[n + 4] = RELAYOUT.MOVED, moved, false, false
    elseif not record then
      if not put or matches(ifMatch, nil) then
        if budgetJobs > 0 and budgetUsed + #body > budget then break end
        budgetUsed, budgetJobs = budgetUsed + #body, budgetJobs + 1
        if byNumber == nil then byNumber = byRef(jobsKey, by) end
        local h = { PENDING, key, due, now, 0, max, ttr, backoff, url, false, false, false, false, false, 0, 0, group, byNumber }
        placeInGroup(jobsKey, groupKey, h, false, nil)
        if expires then setExpiry(h, expires) end
        if priority then setPriority(h, priority) end
        if trace then setTrace(h, trace) end
        if callback then setCallback(h, callback) end
        if store(jobsKey, bodiesKey, id, h, body, false, onlyNew) then
          -- (the score as a string: a number argument to redis.call costs a '%.17g' format)
          redis.call('ZADD', delayedKey, string.format('%d', due), delayedMember(id, key, h[H_PRIORITY]))
          if not earliest or due < earliest then earliest = due end
          addToGroup(jobsKey, groupKey, id, h) -- (joins the group placeInGroup placed it in)
          if entry then Keyed.note(entry, kind, maxWait or window, id, now) end
          local n = #results
          results[n + 1], results[n + 2], results[n + 3], results[n + 4] = OUTCOME.CREATED, due, h[H_VERSION], false
        else
          -- the id is taken (HSETNX wrote nothing): refused, with the job as it stands, its record
          -- and body counted instead of the body sent
          record = redis.call('HGET', jobsKey, id)
          local rh, rInline = decode(record)
          local size = #record + bodySize(bodiesKey, id, rInline)
          if budgetJobs > 1 and budgetUsed - #body + size > budget then break end
          budgetUsed = budgetUsed - #body + size
          local n = #results
          results[n + 1], results[n + 2], results[n + 3], results[n + 4] = REFUSAL.JOB_EXISTS, view(jobsKey, delayedKey, id, rh, loadBody(bodiesKey, id, rInline)), false, false
        end
      else
        local n = #results
        results[n + 1], results[n + 2], results[n + 3], results[n + 4] = REFUSAL.VERSION_MISMATCH, false, false, false
      end
    else
      local h, inline = decode(record)
      local state = h[H_STATE]
      if put and (state == PENDING or state == CANCELLED) and matches(ifMatch, h) then
        if budgetJobs > 0 and budgetUsed + #record + #body > budget then break end
        budgetUsed, budgetJobs = budgetUsed + #record + #body, budgetJobs + 1
        local old, oldChunk = h[H_GROUP], h[H_CHUNK]
        if byNumber == nil then byNumber = byRef(jobsKey, by) end
        local code = OUTCOME.REPLACED
        if state == CANCELLED then
          code = OUTCOME.CREATED
          h = { PENDING, key, due, now, 0, max, ttr, backoff, url, false, false, false, false, false, 0, 0, group, byNumber }
          redis.call('ZREM', doneKey, id)
        else
          -- a new flow key is a new member: the old one leaves the delayed zset (if it is there)
          local member = delayedMember(id, h[H_KEY], h[H_PRIORITY])
          if member ~= delayedMember(id, key, priority) then redis.call('ZREM', delayedKey, member) end
          h[H_RUN_AT], h[H_MAX], h[H_TTR], h[H_BACKOFF], h[H_URL], h[H_UPDATED], h[H_GROUP], h[H_BY], h[H_KEY] = due, max, ttr, backoff, url, now, group, byNumber, key
        end
        placeInGroup(jobsKey, groupKey, h, old, oldChunk)
        if expires or h[H_EXPIRES] then setExpiry(h, expires) end
        if priority or h[H_PRIORITY] then setPriority(h, priority) end
        if trace then setTrace(h, trace) end
        -- the put's callback replaces the job's (none: none; H_CALLBACK is the header's last slot)
        if callback then setCallback(h, callback) else h[H_CALLBACK] = nil end
        store(jobsKey, bodiesKey, id, h, body, true)
        redis.call('ZADD', delayedKey, string.format('%d', due), delayedMember(id, key, h[H_PRIORITY]))
        if not earliest or due < earliest then earliest = due end
        addToGroup(jobsKey, groupKey, id, h)
        -- { group, chunk } the job left, or false
        local left = false
        if old and old ~= h[H_GROUP] then left = { old, oldChunk or 0 } end
        if code == OUTCOME.CREATED then
          local n = #results
          results[n + 1], results[n + 2], results[n + 3], results[n + 4] = OUTCOME.CREATED, due, h[H_VERSION], left
        else
          local n = #results
          results[n + 1], results[n + 2], results[n + 3], results[n + 4] = OUTCOME.REPLACED, view(jobsKey, delayedKey, id, h, ''), left, false
        end
      else
        -- refused: the reply carries the job as it stands, body included
        local size = #record + bodySize(bodiesKey, id, inline)
        if budgetJobs > 0 and budgetUsed + size > budget then break end
        budgetUsed, budgetJobs = budgetUsed + size, budgetJobs + 1
        local code = REFUSAL.JOB_FINISHED
        if not put then
          code = REFUSAL.JOB_EXISTS
        elseif not matches(ifMatch, h) then
          code = REFUSAL.VERSION_MISMATCH
        end
        local n = #results
        results[n + 1], results[n + 2], results[n + 3], results[n + 4] = code, view(jobsKey, delayedKey, id, h, loadBody(bodiesKey, id, inline)), false, false
      end
    end
  end
end

if earliest and (not headBefore or earliest < headBefore) then results[1] = 1 end
return results
