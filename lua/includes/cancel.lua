--[[
  Cancelling a job: at once (cancelNow), or only while it is pending (withdraw); ending it as
  expired at the start of an attempt due after its expiry (expireNow).
]]
--- @include "codes"
--- @include "job"
--- @include "flow"
--- @include "callbacks"
local Cancel = {}
do
  local PENDING, RUNNING, CANCELLED, EXPIRED = Codes.PENDING, Codes.RUNNING, Codes.CANCELLED, Codes.EXPIRED
  local H_STATE, H_KEY, H_ERROR, H_UPDATED = Job.H_STATE, Job.H_KEY, Job.H_ERROR, Job.H_UPDATED
  local H_DEADLINE, H_STARTED, H_GROUP, H_BY = Job.H_DEADLINE, Job.H_STARTED, Job.H_GROUP, Job.H_BY
  local H_ATTEMPTS, H_CLAIM = Job.H_ATTEMPTS, Job.H_CLAIM
  local decode, delayedMember, save, remove = Job.decode, Job.delayedMember, Job.save, Job.remove
  local flowLeave, noteEnd = Flow.flowLeave, Callbacks.noteEnd

  -- Ends job `id` (pending or running) as cancelled: out of the delayed and running zsets (an id
  -- left in the ready list is skipped by claim), kept readable for `retention` ms, or deleted now
  -- when 0 and it has no group. A job of a group is always deleted by the sweeper's purge, which
  -- then takes it out of its group (lib/engine/sweep.ts). `k`: jobs, bodies, delayed, running, done.
  -- `by`: the API key that cancels it (updatedBy), or nil when the queue does.
  local function cancelNow(k, id, h, inline, now, retention, by)
    -- a pending job is in the delayed zset (or the ready list), a running one in the running zset
    if h[H_STATE] == RUNNING then
      redis.call('ZREM', k.running, id)
      flowLeave(k.jobs, h, now)
    else
      redis.call('ZREM', k.delayed, delayedMember(id, h[H_KEY], h[Job.H_PRIORITY]))
    end
    h[H_STATE], h[H_UPDATED], h[H_DEADLINE] = CANCELLED, now, false
    if by then h[H_BY] = Job.byRef(k.jobs, by) end
    if retention > 0 or h[H_GROUP] then
      save(k.jobs, id, h, inline)
      redis.call('ZADD', k.done, now + retention, id)
    else
      remove(k.jobs, k.bodies, id, h)
    end
    noteEnd(k.jobs, id, h, 3, now)
  end

  -- Holds back job `id` (a schedule's occurrence, its schedule paused) unless it started: withdrawn
  -- while pending (as withdraw), cancelled while claimed but not started (its start then refuses
  -- it). `k`: jobs, bodies, delayed, running, done. Returns true when it was held back, false when it
  -- started (it runs on), finished, or is gone.
  local function holdOccurrence(k, id, now)
    local record = redis.call('HGET', k.jobs, id)
    if not record then return false end
    local h, inline = decode(record)
    if h[H_STATE] == PENDING or (h[H_STATE] == RUNNING and not h[H_STARTED]) then
      h[H_ERROR] = 'withdrawn: its schedule was paused before it started'
      cancelNow(k, id, h, inline, now, 0)
      return true
    end
    return false
  end

  -- Withdraws job `id` while it is pending (delayed or ready): cancelled and deleted now (at the next
  -- sweep when it has a group, see cancelNow). `k`: jobs, bodies, delayed, running, done. Returns
  -- false when the job started (running, done or dead: it runs on), true otherwise (withdrawn, gone,
  -- or cancelled before).
  local function withdraw(k, id, now)
    local record = redis.call('HGET', k.jobs, id)
    if not record then return true end
    local h, inline = decode(record)
    if h[H_STATE] == PENDING then
      cancelNow(k, id, h, inline, now, 0)
      return true
    end
    return h[H_STATE] == CANCELLED
  end

  -- The field of a jobs hash counting the jobs of the topic and partition that ever expired (GET
  -- /topics' `expired`: no id holds '#').
  local EXPIRED_FIELD = '#expired'

  -- Ends job `id` as EXPIRED: an attempt (claimed, or about to be claimed and started) whose start
  -- came at or after its expiry (H_EXPIRES) never runs. A running one leaves the running zset and
  -- gives its flow key's slot back, as an ack would, and its claim is not counted as an attempt. Kept readable for `retention` ms in the done
  -- zset (with 0, until the next sweep's purge, which also takes it out of its group), and counted
  -- in EXPIRED_FIELD. `k`: jobs, delayed, running, done.
  local function expireNow(k, id, h, inline, now, retention)
    if h[H_STATE] == RUNNING then
      -- its claim never started: not an attempt (as a give-back), so attempts counts starts only
      h[H_ATTEMPTS], h[H_CLAIM] = h[H_ATTEMPTS] - 1, false
      redis.call('ZREM', k.running, id)
      flowLeave(k.jobs, h, now)
    end
    h[H_STATE], h[H_UPDATED], h[H_DEADLINE] = EXPIRED, now, false
    save(k.jobs, id, h, inline)
    redis.call('ZADD', k.done, now + retention, id)
    redis.call('HINCRBY', k.jobs, EXPIRED_FIELD, 1)
    noteEnd(k.jobs, id, h, 4, now)
  end

  Cancel.expireNow, Cancel.EXPIRED_FIELD = expireNow, EXPIRED_FIELD
  Cancel.cancelNow, Cancel.holdOccurrence, Cancel.withdraw = cancelNow, holdOccurrence, withdraw
end
