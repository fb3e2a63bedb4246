--[[
  The job record. A job is a record in the topic's jobs hash, field = id, value = msgpack header ..
  inline body, and, when its body is not inline, the body (JSON text) in the topic's bodies hash
  under the same id. A body of up to INLINE_BODY_BYTES is inline; a larger one is kept apart, so a
  state change (which rewrites the header) never copies it: its cost does not grow with the body.
  A record without inline bytes has its body apart: a JSON text is never empty.
  Header slots (H_*) below; a slot holding false means "follow the topic's configuration"
  (max attempts, ttr, backoff) or "none" (url, last error, deadline).
  "Ready" is not stored: a PENDING job that is not in the delayed zset is ready, so moving due
  jobs never rewrites a record.
]]
--- @include "codes"
--- @include "clock"
--- @include "call"
local Job = {}
do
  local PENDING, READY = Codes.PENDING, Codes.READY
  local clockTicks = Clock.clockTicks
  local onEachCall = Call.onEachCall

  -- H_KEY: the job's flow key on a flow topic ('' for none given: see includes/flow.lua), false on
  -- any other topic; a pending job's delayed member holds it too (delayedMember, below).
  local H_STATE, H_KEY = 1, 2
  -- H_UPDATED: when the job last changed, false while that is its creation (H_CREATED): a job just
  -- added pays one byte for it, not nine.
  local H_RUN_AT, H_CREATED, H_ATTEMPTS, H_MAX, H_TTR, H_BACKOFF, H_URL, H_ERROR, H_UPDATED, H_DEADLINE =
    3, 4, 5, 6, 7, 8, 9, 10, 11, 12
  -- H_CLAIM: the running attempt's claim token, unique to that claim (ack, fail, start and release
  -- must present it; a re-created job's attempt 1 has another). H_STARTED: when a handler started
  -- the attempt, false while it is only claimed. H_GIVE_BACKS: claims in a row given back without
  -- counting (released after a failed invoke, or timed out before they started).
  local H_CLAIM, H_STARTED, H_GIVE_BACKS = 13, 14, 15
  -- H_VERSION: the version the record's last write gave it (nextVersion, below): growing per job, so
  -- a job, a re-created id included, never repeats an old version, across failovers too.
  -- H_GROUP: the job's group, or false.
  local H_VERSION, H_GROUP = 16, 17
  -- H_BY: the API key that last changed the job (added, replaced, cancelled or redrove it), as the
  -- number that names it in the job's jobs hash (byRef), or false when only the queue has (a
  -- schedule's occurrence).
  local H_BY = 18
  -- H_CHUNK: which of its group's zsets the job is a member of (see includes/groups.lua); nil (not
  -- stored) for the first, and for a job without a group. Last: a header has no holes before it.
  local H_CHUNK = 19
  -- H_HISTORY: the job's last ended attempts that did not end done, oldest first, at most
  -- HISTORY_KEEP; nil (not stored) while it has none, so a job done on its first attempt pays no
  -- byte for it (its one attempt is told by the header: H_STARTED, H_UPDATED, H_RUN_AT). An entry
  -- is { attempt, start - H_CREATED, end - start, start - due, outcome (A_FAILED | A_TIMED_OUT),
  -- error }, msgpack numbers and the error as bounded as H_ERROR; start is the claim time for an
  -- attempt never started. Mirrored by decodeHistory in lib/engine/jobs.ts.
  local H_HISTORY, HISTORY_KEEP, A_FAILED, A_TIMED_OUT = 20, 10, 1, 2
  -- H_EXPIRES: the time (ms) after which no attempt of the job may start (expiresAt): an attempt
  -- whose start comes at or after it ends the job as EXPIRED instead (expireNow in
  -- includes/cancel.lua). nil (not stored) for a job without one, so such a job pays no byte for it
  -- and a start reads it with one table index; written by setExpiry, which fills the slots before it.
  local H_EXPIRES = 21
  -- H_PRIORITY: the job's priority (an integer; a higher one is claimed first among a topic's ready
  -- jobs); nil (not stored) for priority 0, so a job without one pays no byte for it. Written by
  -- setPriority, which fills the slots before it.
  local H_PRIORITY = 22
  -- H_TRACE: the trace context of the request that added the job (32 characters: its trace and span
  -- ids, packed by lib/platform/tracing.ts), when tracing was on; nil (not stored) otherwise. Its
  -- attempts' spans are that span's children. Written by setTrace, which fills the slots before it.
  local H_TRACE = 23
  -- H_CALLBACK: what to notify when the job ends (includes/callbacks.lua): '<on> <topic>' or
  -- '<on> <topic> <url>', <on> four letters saying which ends notify ('d' done, 'x' dead, 'c'
  -- cancelled, 'e' expired; '-' in a place: that end does not). nil (not stored) for a job without
  -- one. Written by setCallback, which fills the slots before it.
  local H_CALLBACK = 24
  -- The field of a jobs (or schedules) hash that holds the largest version known to run ahead of the
  -- clock (nextVersion, remove; not a job: ids never hold '#').
  local SEQ_FIELD = '#seq'
  -- The field of a jobs hash that counts the ids ever pushed to the tail of its ready list (by the
  -- sweep). The tail's place minus the list's length is the head's: a ready listing's cursor names
  -- places counted so, which claims taking ids off the head do not move (lua/listReady-4.lua).
  local READY_TAIL_FIELD = '#tail'
  -- The names of the API keys in H_BY, each a field pair of the jobs hash the records are in:
  -- BY_REF_FIELD .. name -> its number, BY_NAME_FIELD .. number -> the name; BY_COUNT_FIELD counts the
  -- numbers given. A record then holds a one-byte number, not the name (a 14-character name cost each
  -- job 15 bytes, and its record a larger allocator class). The pair is written by the call that
  -- first stores the name, so the records and the names they refer to replicate together; records
  -- never move to another hash, and the names are as many as the keys ever named (bounded by the
  -- keys' registry).
  local BY_REF_FIELD, BY_NAME_FIELD, BY_COUNT_FIELD = '#by:', '#by=', '#bys'
  -- Largest body kept inline in its record. Rewriting a record then copies at most this much body
  -- (about what MAX_ERROR_BYTES lets the header hold), while small bodies cost no second hash entry:
  -- a body kept apart costs about 140 bytes more a job (hash entry, id, allocator rounding; 1,483
  -- against 1,621 bytes a job for 1,024- and 1,025-byte bodies, BENCHMARKS.md).
  local INLINE_BODY_BYTES = 1024

  -- A record's header and its inline body, or false when the body is in the bodies hash.
  local function decode(record)
    local offset, header = cmsgpack.unpack_one(record)
    if offset < 0 then return header, false end
    return header, string.sub(record, offset + 1)
  end

  -- A record's header alone: decode without the copy of its inline body (a sweep purging a job reads
  -- its header only).
  local function headerOf(record)
    local _, header = cmsgpack.unpack_one(record)
    return header
  end

  -- Job `id`'s member in its topic's delayed zset, its flow key `key` (H_KEY) being false or '' (none)
  -- or a key, its priority `priority` (H_PRIORITY) nil or 0 (none) or a number: the id, then a tab
  -- and the priority when it has one, then a space and the key when it has one. A sweep then takes
  -- each due job's key and priority from the member (lua/moveDue-8.lua) instead of reading its
  -- record. Ids never hold a tab or a space, which sort before every character an id holds, so the
  -- members of one score sort as their ids do.
  local function delayedMember(id, key, priority)
    local member = id
    if priority and priority ~= 0 then member = string.format('%s\t%d', member, priority) end
    if key and key ~= '' then return member .. ' ' .. key end
    return member
  end

  -- The id, flow key ('' for none) and priority (nil for none) a delayed zset's member holds
  -- (delayedMember's inverse; a running, dead or done zset's member is the id alone).
  local function memberParts(member)
    local id, priority, key = string.match(member, '^([^ \t]*)\t?(%-?%d*) ?(.*)$')
    return id, key, tonumber(priority)
  end

  -- The header of job `id`'s record, nil when there is none.
  local function header(jobsKey, id)
    local record = redis.call('HGET', jobsKey, id)
    if record then return headerOf(record) end
    return nil
  end

  -- The body of job `id`, whose record decoded to `inline`.
  local function loadBody(bodiesKey, id, inline)
    if inline then return inline end
    return redis.call('HGET', bodiesKey, id) or ''
  end

  -- Bytes of the body of job `id`, whose record decoded to `inline`, without reading it.
  local function bodySize(bodiesKey, id, inline)
    if inline then return #inline end
    return redis.call('HSTRLEN', bodiesKey, id)
  end

  -- Counts a listed job's record and body against `budget` (a listing's); false when they would
  -- pass it: the listing stops before this job and says so.
  local function fitsListing(budget, bodiesKey, id, record, inline)
    return budget.take(#record + bodySize(bodiesKey, id, inline))
  end

  -- How far a version may run ahead of the clock before SEQ_FIELD must hold it: 50 ticks (1 ms),
  -- more than one job is written within a tick (a record written twice in one call; under a fixed
  -- test clock, a claim, its start and its ack in one ms), far less than a failover takes.
  local AHEAD_TICKS = 50

  -- SEQ_FIELD of each hash (by key) as this call read or wrote it; the API keys' names (H_BY) each
  -- jobs hash's numbers stand for ('<jobs key>=<number>'), as this call read them. Each made by the
  -- first that needs it: a claim, start or ack (which rewrite records whose versions are known) makes
  -- neither.
  local callSeqs, callNames = false, false
  onEachCall(function() callSeqs, callNames = false, false end)

  -- SEQ_FIELD of hash `key`, read once a call. With `field` (and `field2`), also that field (and
  -- that one) of the hash, read in the same HMGET: a field read where a job is about to be created,
  -- which reads SEQ_FIELD anyway (addJobs-5's closing mark, its key's number), costs no request of
  -- its own.
  local function seqOf(key, field, field2)
    if not callSeqs then callSeqs = {} end
    if field then
      local got
      if field2 then got = redis.call('HMGET', key, SEQ_FIELD, field, field2) else got = redis.call('HMGET', key, SEQ_FIELD, field) end
      if not callSeqs[key] then callSeqs[key] = (got[1] or 0) + 0 end
      return callSeqs[key], got[2], got[3]
    end
    local seq = callSeqs[key]
    if not seq then
      seq = (redis.call('HGET', key, SEQ_FIELD) or 0) + 0
      callSeqs[key] = seq
    end
    return seq
  end

  -- Raises SEQ_FIELD of hash `key` to version `v`; never lowers it. '%d': exact past 1e14 too,
  -- where tostring (and a number passed to redis.call) keeps 14 digits.
  local function raiseSeq(key, v)
    if v > seqOf(key) then
      redis.call('HSET', key, SEQ_FIELD, string.format('%d', v))
      callSeqs[key] = v
    end
  end

  -- The version of a write to hash `key` (a topic's jobs or schedules in one partition) of a record
  -- whose version was `prev` (0: a new record; nil: not known, as for a schedule or a group cancel's
  -- mark, and then larger than every version the hash gave). The Redis clock in 20 µs ticks since
  -- 2025 (clockTicks: the TIME the call read, or a test's fixed ms × 50), or `prev` + 1 when that is
  -- larger: versions grow per job, and different jobs may share one. A new record's is also larger
  -- than SEQ_FIELD, which remove raises to a deleted record's version when that is not below the
  -- clock, so an id deleted and made again within one tick never repeats a version. SEQ_FIELD is
  -- written only for a version more than AHEAD_TICKS ahead of the clock, so a write costs no command
  -- of its own, and every version a hash gave is at most the larger of SEQ_FIELD and the clock it
  -- was given at plus AHEAD_TICKS (on a clock that does not step back; NTP slews it). A failover to
  -- a replica rolls SEQ_FIELD back but not the clock: later writes get versions larger than any the
  -- failed primary gave or showed, as long as the new primary's clock is not behind the old one's by
  -- more than the failover took (NTP keeps them within milliseconds; a failover takes seconds) and
  -- no job is written more than 50,000 times a second. Below 1e14 (14 digits: tostring and Lua's
  -- number format keep it exact, and If-Match takes it) until 2088.
  local function nextVersion(key, prev)
    local now = clockTicks()
    local v
    if prev == nil then
      v = math.max(seqOf(key) + 1, now + AHEAD_TICKS + 1)
    elseif prev == 0 then
      v = math.max(seqOf(key) + 1, now)
    else
      v = math.max(prev + 1, now)
    end
    if v > now + AHEAD_TICKS then raiseSeq(key, v) end
    return v
  end

  -- The field of a jobs hash that holds the number of API key `name` (H_BY), for a caller that reads
  -- it with another (seqOf).
  local function byField(name)
    return BY_REF_FIELD .. name
  end

  -- The number that names API key `name` (false: none, and then false) in jobs hash `jobsKey`, given
  -- it anew when the hash has none. `known`: the value of its byField as the caller read it (false:
  -- the hash has none; nil: not read, read here).
  local function byRef(jobsKey, name, known)
    if not name then return false end
    local n = known
    if n == nil then n = redis.call('HGET', jobsKey, BY_REF_FIELD .. name) end
    if n then return n + 0 end -- (+ 0 parses once; tonumber twice)
    n = redis.call('HINCRBY', jobsKey, BY_COUNT_FIELD, 1)
    redis.call('HSET', jobsKey, BY_REF_FIELD .. name, string.format('%d', n), string.format('%s%d', BY_NAME_FIELD, n), name)
    if not callNames then callNames = {} end
    callNames[string.format('%s=%d', jobsKey, n)] = name
    return n
  end

  -- The name of the API key numbered `n` (H_BY; false: none, and then false) in jobs hash `jobsKey`,
  -- read once a call.
  local function byName(jobsKey, n)
    if not n then return false end
    local at = string.format('%s=%d', jobsKey, n)
    if not callNames then callNames = {} end
    local name = callNames[at]
    if name == nil then
      name = redis.call('HGET', jobsKey, string.format('%s%d', BY_NAME_FIELD, n)) or false
      callNames[at] = name
    end
    return name
  end

  -- Rewrites job `id`'s record with header `h` (and the next version), its body staying where it is.
  local function save(jobsKey, id, h, inline)
    h[H_VERSION] = nextVersion(jobsKey, h[H_VERSION])
    redis.call('HSET', jobsKey, id, cmsgpack.pack(h) .. (inline or ''))
  end

  -- Writes job `id` with header `h` (and the next version) and a new body: inline when small, else
  -- in the bodies hash. `replacing`: the job had a record, whose body kept apart (if any) is dropped
  -- when the new one is inline; a header made anew for it (version 0) takes the record's version.
  -- The version is also larger than SEQ_FIELD, which a group cancel's mark raised (includes/
  -- groupCancel.lua): a job that joins a group after the mark is never taken for one before it.
  -- `onlyNew`: the id is not known to be free; the record is written only if it is (HSETNX: no read
  -- before), and false is returned, nothing written, when it is taken. True otherwise.
  local function store(jobsKey, bodiesKey, id, h, body, replacing, onlyNew)
    local prev = h[H_VERSION]
    if replacing and prev == 0 then
      local old = header(jobsKey, id)
      if old then prev = old[H_VERSION] end
    end
    h[H_VERSION] = nextVersion(jobsKey, math.max(prev, seqOf(jobsKey)))
    local inline = #body <= INLINE_BODY_BYTES
    local record = cmsgpack.pack(h)
    if inline then record = record .. body end
    if onlyNew then
      if redis.call('HSETNX', jobsKey, id, record) == 0 then return false end
    else
      redis.call('HSET', jobsKey, id, record)
    end
    if not inline then
      redis.call('HSET', bodiesKey, id, body)
    elseif replacing then
      redis.call('HDEL', bodiesKey, id)
    end
    return true
  end

  -- Deletes job `id`, whose record's header is `h` (as this call decoded or last wrote it): its
  -- record and its body. When the record's version is not below the clock, SEQ_FIELD is raised to
  -- it, and the id made again within the tick gets a larger one.
  local function remove(jobsKey, bodiesKey, id, h)
    local v = h[H_VERSION]
    if v >= clockTicks() then raiseSeq(jobsKey, v) end
    redis.call('HDEL', jobsKey, id)
    redis.call('HDEL', bodiesKey, id)
  end

  -- Appends the running attempt of header `h` to its history as ended at `ended` with `outcome`
  -- (A_FAILED | A_TIMED_OUT) and error `err`, dropping the oldest past HISTORY_KEEP; call it before
  -- H_UPDATED (the claim time while it runs) and H_RUN_AT (its due time) change. Bounded: at most
  -- HISTORY_KEEP entries are moved.
  local function recordAttempt(h, ended, outcome, err)
    local start = h[H_STARTED] or h[H_UPDATED]
    local entry = { h[H_ATTEMPTS], start - h[H_CREATED], math.max(ended - start, 0), start - h[H_RUN_AT], outcome, err or false }
    local log = h[H_HISTORY]
    if not log then
      log = {}
      if h[H_CHUNK] == nil then h[H_CHUNK] = false end -- no hole before H_HISTORY: the header stays an array
      h[H_HISTORY] = log
    end
    if #log >= HISTORY_KEEP then table.remove(log, 1) end
    log[#log + 1] = entry
  end

  -- Sets header `h`'s expiry to `at` (ms, or false: none). No hole before H_EXPIRES: the slots
  -- before it that are not stored (H_CHUNK, H_HISTORY) hold false, so the header stays an array.
  local function setExpiry(h, at)
    if h[H_CHUNK] == nil then h[H_CHUNK] = false end
    if h[H_HISTORY] == nil then h[H_HISTORY] = false end
    h[H_EXPIRES] = at
  end

  -- Sets header `h`'s priority to `p` (a number; 0 or false: none, stored as nil when it is the last
  -- slot). No hole before H_PRIORITY: the slots before it that are not stored hold false.
  local function setPriority(h, p)
    if not p or p == 0 then
      if h[H_PRIORITY] == nil then return end
      if h[H_TRACE] == nil and h[H_CALLBACK] == nil then h[H_PRIORITY] = nil else h[H_PRIORITY] = false end
      return
    end
    if h[H_CHUNK] == nil then h[H_CHUNK] = false end
    if h[H_HISTORY] == nil then h[H_HISTORY] = false end
    if h[H_EXPIRES] == nil then h[H_EXPIRES] = false end
    h[H_PRIORITY] = p
  end

  -- Sets header `h`'s trace context to `t` (a string). No hole before H_TRACE: the slots before it
  -- that are not stored hold false (H_PRIORITY false: none).
  local function setTrace(h, t)
    if h[H_CHUNK] == nil then h[H_CHUNK] = false end
    if h[H_HISTORY] == nil then h[H_HISTORY] = false end
    if h[H_EXPIRES] == nil then h[H_EXPIRES] = false end
    if h[H_PRIORITY] == nil then h[H_PRIORITY] = false end
    h[H_TRACE] = t
  end

  -- Sets header `h`'s callback to `c` (a string, H_CALLBACK). No hole before it: the slots before it
  -- that are not stored hold false.
  local function setCallback(h, c)
    if h[H_TRACE] == nil then setTrace(h, false) end
    h[H_CALLBACK] = c
  end

  -- The job as the scripts return it: the state with "ready" resolved, the header, then the body,
  -- or false for a body kept apart that the script did not read (the caller reads it).
  -- Then the version, the group, the API key that last changed it, the flow key, when its last attempt
  -- started (false: not started), its history (H_HISTORY, false: none), its expiry (H_EXPIRES,
  -- false: none), its priority (H_PRIORITY, 0: none), its trace context (H_TRACE, false: none) and
  -- its callback (H_CALLBACK, false: none).
  -- Mirrored by JobView in
  -- lib/engine/shapes.ts, in this order.
  -- `jobsKey`, `delayedKey`: the job's jobs hash and delayed zset.
  local function view(jobsKey, delayedKey, id, h, body)
    local state = h[H_STATE]
    if state == PENDING and not redis.call('ZSCORE', delayedKey, delayedMember(id, h[H_KEY], h[H_PRIORITY])) then
      state = READY
    end
    return { id, state, h[H_RUN_AT], h[H_CREATED], h[H_ATTEMPTS], h[H_MAX], h[H_TTR], h[H_BACKOFF],
      h[H_URL], h[H_ERROR], h[H_UPDATED] or h[H_CREATED], h[H_DEADLINE], body, h[H_VERSION], h[H_GROUP],
      byName(jobsKey, h[H_BY]), h[H_KEY],
      h[H_STARTED], h[H_HISTORY] or false, h[H_EXPIRES] or false, h[H_PRIORITY] or 0, h[H_TRACE] or false,
      h[H_CALLBACK] or false }
  end

  -- True when `ifMatch` ('' none, '*' any, else a version) lets a change of a job whose header is
  -- `h` (nil: there is no job) go ahead.
  local function matches(ifMatch, h)
    if ifMatch == '' then return true end
    if not h then return false end
    return ifMatch == '*' or tonumber(ifMatch) == h[H_VERSION]
  end

  Job.H_STATE, Job.H_KEY, Job.H_RUN_AT, Job.H_CREATED = H_STATE, H_KEY, H_RUN_AT, H_CREATED
  Job.H_ATTEMPTS, Job.H_MAX, Job.H_TTR, Job.H_BACKOFF, Job.H_URL = H_ATTEMPTS, H_MAX, H_TTR, H_BACKOFF, H_URL
  Job.H_ERROR, Job.H_UPDATED, Job.H_DEADLINE, Job.H_CLAIM = H_ERROR, H_UPDATED, H_DEADLINE, H_CLAIM
  Job.H_STARTED, Job.H_GIVE_BACKS, Job.H_VERSION, Job.H_GROUP = H_STARTED, H_GIVE_BACKS, H_VERSION, H_GROUP
  Job.H_BY, Job.H_CHUNK, Job.READY_TAIL_FIELD, Job.decode = H_BY, H_CHUNK, READY_TAIL_FIELD, decode
  Job.headerOf, Job.delayedMember, Job.memberParts, Job.header = headerOf, delayedMember, memberParts, header
  Job.loadBody, Job.bodySize, Job.fitsListing, Job.seqOf = loadBody, bodySize, fitsListing, seqOf
  Job.nextVersion, Job.save, Job.store, Job.remove, Job.view = nextVersion, save, store, remove, view
  Job.byField, Job.byRef = byField, byRef
  Job.matches, Job.H_HISTORY, Job.recordAttempt, Job.A_FAILED, Job.A_TIMED_OUT = matches, H_HISTORY, recordAttempt, A_FAILED, A_TIMED_OUT
  Job.H_EXPIRES, Job.setExpiry, Job.H_PRIORITY, Job.setPriority = H_EXPIRES, setExpiry, H_PRIORITY, setPriority
  Job.INLINE_BODY_BYTES, Job.H_TRACE, Job.setTrace = INLINE_BODY_BYTES, H_TRACE, setTrace
  Job.H_CALLBACK, Job.setCallback = H_CALLBACK, setCallback
end
