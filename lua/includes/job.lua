--[[
  Shared helpers, prepended to every script by lib/engine/lua.ts. Declares and touches no keys.

  A job is a record in the topic's jobs hash, field = id, value = msgpack header .. inline body,
  and, when its body is not inline, the body (JSON text) in the topic's bodies hash under the same
  id. A body of up to INLINE_BODY_BYTES is inline; a larger one is kept apart, so a state change
  (which rewrites the header) never copies it: its cost does not grow with the body. A record of
  older code holds its body inline whatever its size; it is read as it is, and the first rewrite of
  it moves a large body to the bodies hash (save), so an upgrade needs no migration step.
  A record without inline bytes has its body apart: a JSON text is never empty.
  Header slots (H_*) below; a slot holding false means "follow the topic's configuration"
  (max attempts, ttr, backoff) or "none" (url, last error, deadline).
  "Ready" is not stored: a PENDING job that is not in the delayed zset is ready, so moving due
  jobs never rewrites a record.
  Work in bytes: a script that loops over jobs counts the bytes of the records and bodies it reads
  or writes against the byte budget its caller passes (SCRIPT_CALL_BYTES in lib/rules/limits.ts), and
  stops before the job that would pass it (never before its first job), saying so in its reply.
]]
-- Job states, as stored and in views; mirrored by JOB_STATE in lib/engine/codes.ts.
local PENDING, READY, RUNNING, DONE, DEAD, CANCELLED = 1, 2, 3, 4, 5, 6
local H_STATE, H_RUN_AT, H_CREATED, H_ATTEMPTS, H_MAX, H_TTR, H_BACKOFF, H_URL, H_ERROR, H_UPDATED, H_DEADLINE =
  1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11
-- H_CLAIM: the running attempt's claim token, unique to that claim (ack, fail, start and release
-- must present it; a re-created job's attempt 1 has another). H_STARTED: when a handler started
-- the attempt, false while it is only claimed. H_GIVE_BACKS: claims in a row given back without
-- counting (released after a failed invoke, or timed out before they started).
local H_CLAIM, H_STARTED, H_GIVE_BACKS = 12, 13, 14
-- H_VERSION: the version the record's last write gave it, from the jobs hash's counter (SEQ_FIELD):
-- unique and growing within one topic and partition, so a re-created id never repeats an old
-- version (0: a record of older code). H_GROUP: the job's group, or false.
local H_VERSION, H_GROUP = 15, 16
-- H_CHUNK: which of its group's zsets the job is a member of (see "Groups" below); nil (not
-- stored) for the first, and for a job without a group.
local H_CHUNK = 17
-- Fields of the jobs hash that are not jobs (ids never hold '#'): the version counter, per group
-- being cancelled the version the cancel started at (see lua/cancelGroup-6.lua), and per group
-- with more than one zset the range of its zsets (see "Groups" below).
local SEQ_FIELD, GROUP_CANCEL_FIELD, GROUP_CHUNKS_FIELD = '#seq', '#cancel:', '#chunks:'
-- Members of one zset of a group: at most zset-max-listpack-entries (128 by default), so that it
-- stays a listpack (about 25 bytes a member) and never becomes a skiplist (about 120).
local GROUP_CHUNK_SIZE = 128
-- A small group's first chunk kept in a shared bucket (see "Small groups" below): at most this
-- many jobs, in a value of at most hash-max-listpack-value (64) bytes, so that a bucket stays a
-- listpack; buckets split when they hold this many groups on average (the fullest hold about
-- twice as many, far under hash-max-listpack-entries, 512 by default: see "Small groups"). The
-- jobs hash field GROUP_BUCKETS_FIELD holds 'level split count' (absent: no group in a bucket).
local BUCKET_SLOTS, BUCKET_VALUE_BYTES, BUCKET_LOAD = 3, 64, 96
local GROUP_BUCKETS_FIELD = '#gbuckets'
local MAX_ERROR_BYTES = 1024 -- keeps a failing job's record small whatever the handler threw
-- Largest body kept inline in its record. Rewriting a record then copies at most this much body
-- (about what MAX_ERROR_BYTES lets the header hold), while small bodies cost no second hash entry:
-- a body kept apart costs about 100 bytes more a job (hash entry, id, allocator rounding; 1,456
-- against 1,558 bytes a job for 1,024- and 1,025-byte bodies, BENCHMARKS.md).
local INLINE_BODY_BYTES = 1024
-- Give-backs in a row that cost no attempt; the next counts as a failed attempt, so a job whose
-- handler can never be reached still fails (and dead-letters) instead of cycling forever.
local MAX_GIVE_BACKS = 5

-- Every code a script replies with, by name. Each table is mirrored, name for name and value for
-- value, by the table of the same name in lib/engine/codes.ts (test/integration/codes.test.ts
-- checks the two agree).
-- Refusals: the script changed nothing and says why.
local REFUSAL = { JOB_EXISTS = -1, NOT_FOUND = -2, JOB_FINISHED = -3, STALE_ATTEMPT = -4, CANCELLED = -5, VERSION_MISMATCH = -6 }
-- What a job script did.
local OUTCOME = {
  CREATED = 1, REPLACED = 2,             -- addJobs
  CANCELLED = 1, ALREADY_CANCELLED = 0,  -- cancelJob
  RESCHEDULED = 1,                       -- rescheduleJob
  ACKED = 1,                             -- ackJob
  RETRY_SCHEDULED = 1, DEAD_LETTERED = 0, -- failJob, failAttempt
  GIVEN_BACK = 2,                         -- giveBack: back to the ready list, no attempt counted
  STARTED = 1,                            -- startAttempts: live, marked started; run it
  ADVANCED = 1, DELETED = 1               -- advanceSchedule, deleteSchedule (putSchedule: CREATED, REPLACED)
}
-- holdLease (which otherwise replies the wake counter) and releaseLease.
local LEASE = { NOT_OWNER = -1, KEPT = 0, RELEASED = 1 }
-- wakeSweeper.
local WAKE = { NOTHING = 0, WOKEN = 1, START_SWEEPER = 2 }
-- startFanout (MARKED, ALREADY_RUNNING) and endFanout (CLEARED, NOT_OURS).
local FANOUT_MARK = { MARKED = 1, ALREADY_RUNNING = 0, CLEARED = 1, NOT_OURS = 0 }

-- Milliseconds on the Redis server's clock, or the fixed clock a test passes. Every script that
-- needs the time reads it once, at its start, from ARGV[1]: `local now = clock(ARGV[1])`.
local function clock(fixed)
  if fixed ~= nil and fixed ~= '' then return tonumber(fixed) end
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

-- A record's header and its inline body, or false when the body is in the bodies hash.
local function decode(record)
  local offset, header = cmsgpack.unpack_one(record)
  -- slots a record of older code lacks; set, so that the header stays an array when encoded
  if header[H_CLAIM] == nil then header[H_CLAIM] = false end
  if header[H_STARTED] == nil then header[H_STARTED] = false end
  if header[H_GIVE_BACKS] == nil then header[H_GIVE_BACKS] = 0 end
  if header[H_VERSION] == nil then header[H_VERSION] = 0 end
  if header[H_GROUP] == nil then header[H_GROUP] = false end
  if offset < 0 then return header, false end
  return header, string.sub(record, offset + 1)
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

-- The next version of the jobs hash `jobsKey` (one topic in one partition).
local function nextVersion(jobsKey)
  return redis.call('HINCRBY', jobsKey, SEQ_FIELD, 1)
end

-- Rewrites job `id`'s record with header `h` (and the next version), its body staying where it
-- is: an inline body over INLINE_BODY_BYTES (only a record of older code has one) moves to the
-- bodies hash, once.
local function save(jobsKey, bodiesKey, id, h, inline)
  h[H_VERSION] = nextVersion(jobsKey)
  if inline and #inline > INLINE_BODY_BYTES then
    redis.call('HSET', bodiesKey, id, inline)
    inline = false
  end
  redis.call('HSET', jobsKey, id, cmsgpack.pack(h) .. (inline or ''))
end

-- Writes job `id` with header `h` (and the next version) and a new body: inline when small, else
-- in the bodies hash. `replacing`: the job had a record, whose body kept apart (if any) is dropped
-- when the new one is inline.
local function store(jobsKey, bodiesKey, id, h, body, replacing)
  h[H_VERSION] = nextVersion(jobsKey)
  if #body <= INLINE_BODY_BYTES then
    redis.call('HSET', jobsKey, id, cmsgpack.pack(h) .. body)
    if replacing then redis.call('HDEL', bodiesKey, id) end
  else
    redis.call('HSET', jobsKey, id, cmsgpack.pack(h))
    redis.call('HSET', bodiesKey, id, body)
  end
end

-- Deletes job `id`: its record and its body.
local function remove(jobsKey, bodiesKey, id)
  redis.call('HDEL', jobsKey, id)
  redis.call('HDEL', bodiesKey, id)
end

local function optional(value)
  if value == nil or value == '' then return false end
  return value
end

local function optionalNumber(value)
  if value == nil or value == '' then return false end
  return tonumber(value)
end

-- Delay in ms before retrying after failed attempt number `attempt` (1-based).
-- spec: 'f:<ms>' | 'e:<baseMs>:<capMs>:<jitterPermille>' | 'l:<ms>,<ms>,...'; rand in [0, 1).
local function retryDelay(spec, attempt, rand)
  local kind = string.sub(spec, 1, 1)
  if kind == 'f' then return tonumber(string.sub(spec, 3)) end
  if kind == 'e' then
    local base, cap, jitter = string.match(spec, '^e:(%d+):(%d+):(%d+)$')
    local d = math.min(tonumber(cap), tonumber(base) * 2 ^ (attempt - 1))
    return math.floor(d - d * (tonumber(jitter) / 1000) * rand)
  end
  local steps = {}
  for step in string.gmatch(string.sub(spec, 3), '%d+') do steps[#steps + 1] = tonumber(step) end
  return steps[math.min(attempt, #steps)]
end

-- Ends a running attempt as failed: schedules the next attempt after the backoff (or after
-- retryAfter ms when given), or dead-letters the job when its attempts are used up. `k` holds the
-- script's jobs, bodies, delayed and dead keys; `inline` is what decode gave for the record.
-- Returns OUTCOME.RETRY_SCHEDULED, dueAt when a retry was scheduled; OUTCOME.DEAD_LETTERED when
-- the job went dead.
local function failAttempt(k, id, h, inline, now, err, defaultMax, defaultBackoff, rand, retryAfter)
  h[H_ERROR] = string.sub(err, 1, MAX_ERROR_BYTES)
  h[H_UPDATED] = now
  h[H_DEADLINE] = false
  if h[H_ATTEMPTS] >= (h[H_MAX] or defaultMax) then
    h[H_STATE] = DEAD
    redis.call('ZADD', k.dead, now, id)
    save(k.jobs, k.bodies, id, h, inline)
    return OUTCOME.DEAD_LETTERED, false
  end
  local due = now + (retryAfter or retryDelay(h[H_BACKOFF] or defaultBackoff, h[H_ATTEMPTS], rand))
  h[H_STATE] = PENDING
  h[H_RUN_AT] = due
  redis.call('ZADD', k.delayed, due, id)
  save(k.jobs, k.bodies, id, h, inline)
  return OUTCOME.RETRY_SCHEDULED, due
end

-- True when the job is running the attempt the caller holds: number `attempt` claimed with token
-- `claim`. An attempt claimed before claims had tokens is known by its number alone.
local function isAttempt(h, attempt, claim)
  if h[H_STATE] ~= RUNNING or h[H_ATTEMPTS] ~= tonumber(attempt) then return false end
  if h[H_CLAIM] then return h[H_CLAIM] == claim end
  return true
end

-- Gives a running attempt that never started back to the front of the ready list without counting
-- it (`why` says what happened, for lastError). The give-back after MAX_GIVE_BACKS in a row counts
-- as a failed attempt instead (retry or dead, as failAttempt). `k` as for failAttempt, and k.ready.
-- Returns OUTCOME.GIVEN_BACK, or failAttempt's reply.
local function giveBack(k, id, h, inline, now, why, defaultMax, defaultBackoff, rand)
  local n = h[H_GIVE_BACKS] + 1
  h[H_CLAIM], h[H_STARTED] = false, false
  if n > MAX_GIVE_BACKS then
    h[H_GIVE_BACKS] = 0
    local err = 'attempt ' .. h[H_ATTEMPTS] .. ' ' .. why .. ', ' .. n .. ' claims in a row; counted as a failed attempt'
    return failAttempt(k, id, h, inline, now, err, defaultMax, defaultBackoff, rand, false)
  end
  h[H_ERROR] = string.sub('claim of attempt ' .. h[H_ATTEMPTS] .. ' given back: ' .. why .. ' (' .. n .. ' of ' .. MAX_GIVE_BACKS .. ' in a row without counting)', 1, MAX_ERROR_BYTES)
  h[H_STATE], h[H_ATTEMPTS], h[H_UPDATED], h[H_DEADLINE], h[H_GIVE_BACKS] = PENDING, h[H_ATTEMPTS] - 1, now, false, n
  save(k.jobs, k.bodies, id, h, inline)
  redis.call('LPUSH', k.ready, id)
  return OUTCOME.GIVEN_BACK
end

-- Counts an attempt's end in `counts` ({ givenBack, retried, deadLettered }) by its outcome code
-- (giveBack's or failAttempt's).
local function tally(counts, code)
  if code == OUTCOME.GIVEN_BACK then
    counts.givenBack = counts.givenBack + 1
  elseif code == OUTCOME.RETRY_SCHEDULED then
    counts.retried = counts.retried + 1
  else
    counts.deadLettered = counts.deadLettered + 1
  end
end

-- The job as the scripts return it: the state with "ready" resolved, the header, then the body,
-- or false for a body kept apart that the script did not read (the caller reads it).
-- Then the version and the group. Mirrored by JobView in lib/engine/shapes.ts, in this order.
local function view(delayedKey, id, h, body)
  local state = h[H_STATE]
  if state == PENDING and not redis.call('ZSCORE', delayedKey, id) then state = READY end
  return { id, state, h[H_RUN_AT], h[H_CREATED], h[H_ATTEMPTS], h[H_MAX], h[H_TTR], h[H_BACKOFF],
    h[H_URL], h[H_ERROR], h[H_UPDATED], h[H_DEADLINE], body, h[H_VERSION], h[H_GROUP] }
end

-- True when `ifMatch` ('' none, '*' any, else a version) lets a change of a job whose header is
-- `h` (nil: there is no job) go ahead.
local function matches(ifMatch, h)
  if ifMatch == '' then return true end
  if not h then return false end
  return ifMatch == '*' or tonumber(ifMatch) == h[H_VERSION]
end

-- Ends job `id` (pending or running) as cancelled: out of the delayed and running zsets (an id
-- left in the ready list is skipped by claim), kept readable for `retention` ms, or deleted now
-- when 0 and it has no group. A job of a group is always deleted by the sweeper's purge, which
-- then takes it out of its group (lib/engine/sweep.ts). `k`: jobs, bodies, delayed, running, done.
local function cancelNow(k, id, h, inline, now, retention)
  -- a pending job is in the delayed zset (or the ready list), a running one in the running zset
  if h[H_STATE] == RUNNING then redis.call('ZREM', k.running, id) else redis.call('ZREM', k.delayed, id) end
  h[H_STATE], h[H_UPDATED], h[H_DEADLINE] = CANCELLED, now, false
  if retention > 0 or h[H_GROUP] then
    save(k.jobs, k.bodies, id, h, inline)
    redis.call('ZADD', k.done, now + retention, id)
  else
    remove(k.jobs, k.bodies, id)
  end
end

-- lastError of a job that a claim cancelled because its group's cancel (started at version
-- `mark`) had not reached it yet: lua/cancelGroup-6.lua counts it as cancelled by that call.
local function groupCancelError(mark)
  return 'cancelled with its group (cancel at version ' .. mark .. ') before it could start'
end

-- A byte budget: `fits(bytes)` is true while `bytes` more keep the call within `budget`, and
-- for the call's first job always (unless `strict`); `spend(bytes)` counts them.
local function byteBudget(budget, strict)
  local used, jobs = 0, 0
  return {
    fits = function(bytes) return (jobs == 0 and not strict) or used + bytes <= budget end,
    spend = function(bytes) used, jobs = used + bytes, jobs + 1 end,
  }
end

-- Counts a listed job's record and body against `budget` (a listing's); false when they would
-- pass it: the listing stops before this job and says so.
local function fitsListing(budget, bodiesKey, id, record, inline)
  local size = #record + bodySize(bodiesKey, id, inline)
  if not budget.fits(size) then return false end
  budget.spend(size)
  return true
end

-- Score of the zset's first member, or false when it is empty.
local function headScore(key)
  local head = redis.call('ZRANGE', key, 0, 0, 'WITHSCORES')
  if head[2] then return tonumber(head[2]) end
  return false
end

-- Groups. The jobs of a group in one topic and partition are members of the group's zsets, its
-- chunks: the group's key (chunk 0, the key a script is passed), then `<key>#1`, `<key>#2`, ...
-- (ids and groups never hold '#'). A job joins the newest chunk, or opens the next when that one
-- holds GROUP_CHUNK_SIZE, so every chunk stays a listpack; its score is one more than the chunk's
-- highest (a small number: 2 bytes a member where a version takes 5 or 6; a chunk of older code
-- holds versions, which this continues). So the chunks in turn, each by score, hold the jobs in the
-- order they joined. A group cancel closes the newest chunk at its mark (closeChunks): the jobs
-- that joined before the mark are the members of the chunks up to that one. The jobs hash field
-- GROUP_CHUNKS_FIELD .. group holds 'low cur': the oldest chunk that may have members, and the
-- newest; only while the group has chunks past the first, or a cancel under way has closed its
-- first (absent: both 0). A job's record says
-- which chunk it is in (H_CHUNK), so that it leaves the right one. The chunks' names derive from
-- the key the script is passed: they hash to its slot (the `{p<n>}` tag).

-- The name of chunk `c` of the group whose key is `base`.
local function chunkKey(base, c)
  if c == 0 then return base end
  return base .. '#' .. c
end

-- Small groups. While a group's first chunk holds few jobs (BUCKET_SLOTS, and their ids fit in
-- BUCKET_VALUE_BYTES), it is kept not in a zset of its own (about 120 bytes of key for a group of
-- 1) but in a bucket shared with other small groups of the topic and partition: a hash whose
-- field is 4 bytes of the SHA-1 of the group's name, and whose value lists the ids comma-separated
-- in slots (ids never hold ','). A job's place there is its slot, 1 to BUCKET_SLOTS; a slot
-- emptied by a leave stays empty until the field empties. Chunk 0 of a group is in its bucket
-- exactly when its zset (the group's key) does not exist. A job that would not fit, and the first
-- step of a cancel (closeChunks), move the group's jobs to its zset at the places they had
-- (promote), so cursors carry over. Groups whose names hash alike share a field: the one that
-- finds the field holding another group's jobs goes to its zset at once. Each job's record names
-- its group, so a member that is not the group's (or no longer in it) is told apart as in a zset
-- (inChunk). Buckets are `<jobs key>#gb<n>` and split one at a time as they fill (linear hashing:
-- bucket `split` of 2^level splits into itself and `split + 2^level`), so they stay listpacks:
-- a bucket whose turn to split has not come holds twice the groups of one that split this round,
-- up to 2 * BUCKET_LOAD on average, which must stay under hash-max-listpack-entries (512 by
-- default in Redis, ElastiCache and MemoryDB; zsets' limit is 128): a hash past it turns into a
-- hashtable, several times the bytes a field, and stays one. With 96 the fullest bucket seen while
-- 1,000,000 groups of 1 came one by one held 232 (a simulation of this rule). A split writes both
-- halves anew, so a bucket that went past a lower limit (a server set to less) is a listpack again
-- after its split.

-- The group's 4-byte field in its bucket, and the 32-bit number it stands for.
local function bucketField(group)
  local n = tonumber(string.sub(redis.sha1hex(group), 1, 8), 16)
  return string.char(math.floor(n / 16777216) % 256, math.floor(n / 65536) % 256, math.floor(n / 256) % 256, n % 256), n
end

local function fieldNumber(field)
  local a, b, c, d = string.byte(field, 1, 4)
  return ((a * 256 + b) * 256 + c) * 256 + d
end

-- level, split, count: the buckets are 2^level + split; count: fields in all of them.
local function bucketState(jobsKey)
  local state = redis.call('HGET', jobsKey, GROUP_BUCKETS_FIELD)
  if not state then return 0, 0, 0 end
  local level, split, count = string.match(state, '^(%d+) (%d+) (%d+)$')
  return tonumber(level), tonumber(split), tonumber(count)
end

-- The name of bucket `b` of the jobs hash `jobsKey`.
local function bucketName(jobsKey, b)
  return jobsKey .. '#gb' .. b
end

-- The bucket of the field whose number is `n`.
local function bucketKey(jobsKey, n, level, split)
  local b = n % 2 ^ level
  if b < split then b = n % 2 ^ (level + 1) end
  return bucketName(jobsKey, b)
end

-- The bucket key and field of group `group`, and the field's slots ({} when it has none).
local function bucketOf(jobsKey, group)
  local field, n = bucketField(group)
  local level, split = bucketState(jobsKey)
  local key = bucketKey(jobsKey, n, level, split)
  local slots = {}
  local value = redis.call('HGET', key, field)
  if value then
    for id in string.gmatch(value .. ',', '([^,]*),') do slots[#slots + 1] = id end
  end
  return key, field, slots
end

-- Splits bucket `split` (of level `level`): the fields whose number says so move to bucket
-- split + 2^level (new: no bucket of that number is in use), the others are written back into a
-- new `split`, so both are listpacks again. At most the bucket's fields (about 2 * BUCKET_LOAD).
local function splitBucket(jobsKey, level, split)
  local from = bucketName(jobsKey, split)
  local to = bucketName(jobsKey, split + 2 ^ level)
  local entries = redis.call('HGETALL', from)
  local stay, move = {}, {}
  for i = 1, #entries, 2 do
    local half = stay
    if fieldNumber(entries[i]) % 2 ^ (level + 1) ~= split then half = move end
    half[#half + 1] = entries[i]
    half[#half + 1] = entries[i + 1]
  end
  redis.call('DEL', from)
  if #stay > 0 then redis.call('HSET', from, unpack(stay)) end
  if #move > 0 then redis.call('HSET', to, unpack(move)) end
end

-- Writes the slots of field `field` of bucket `key` (`existed`: the field was there), deleting the
-- field when no slot holds an id; keeps the count of fields, and splits a bucket when they are
-- more than BUCKET_LOAD a bucket.
local function writeSlots(jobsKey, key, field, slots, existed)
  local used = false
  for _, id in ipairs(slots) do
    if id ~= '' then used = true end
  end
  if used then redis.call('HSET', key, field, table.concat(slots, ',')) end
  if used == existed then return end
  if not used then redis.call('HDEL', key, field) end
  local level, split, count = bucketState(jobsKey)
  if used then
    count = count + 1
    if count > BUCKET_LOAD * (2 ^ level + split) then
      splitBucket(jobsKey, level, split)
      split = split + 1
      if split == 2 ^ level then level, split = level + 1, 0 end
    end
  else
    count = count - 1
  end
  if count > 0 then
    redis.call('HSET', jobsKey, GROUP_BUCKETS_FIELD, level .. ' ' .. split .. ' ' .. count)
  else
    redis.call('HDEL', jobsKey, GROUP_BUCKETS_FIELD)
  end
end

-- The oldest chunk of group `group` that may have members, and the newest.
local function groupChunks(jobsKey, group)
  local range = redis.call('HGET', jobsKey, GROUP_CHUNKS_FIELD .. group)
  if not range then return 0, 0 end
  local low, cur = string.match(range, '^(%d+) (%d+)$')
  return tonumber(low), tonumber(cur)
end

-- Sets h[H_CHUNK] for a job about to be stored with header `h`, whose record had group `old` and
-- chunk `oldChunk` (false, nil: none, 0): a job that stays in its group keeps its place; one that
-- joins a group goes to the newest chunk, or opens the next when that is full. Then store the
-- record, then addToGroup.
local function placeInGroup(jobsKey, base, h, old, oldChunk)
  local group = h[H_GROUP]
  local c
  if not group then
    c = 0
  elseif old == group then
    c = oldChunk or 0
  else
    local low, cur = groupChunks(jobsKey, group)
    c = cur
    if redis.call('ZCARD', chunkKey(base, cur)) >= GROUP_CHUNK_SIZE then
      c = cur + 1
      redis.call('HSET', jobsKey, GROUP_CHUNKS_FIELD .. group, low .. ' ' .. c)
    end
  end
  if c == 0 then h[H_CHUNK] = nil else h[H_CHUNK] = c end
end

-- The highest score in chunk `key`, 0 when it is empty.
local function lastPlace(key)
  local last = redis.call('ZRANGE', key, -1, -1, 'WITHSCORES')
  return tonumber(last[2] or 0)
end

-- True when member `id` of chunk `c` of group `group` stands for job record `h` (nil: none):
-- false once the job left the group (purged, or moved by a put) or joined it again elsewhere.
local function inChunk(h, group, c)
  return h ~= nil and h[H_GROUP] == group and (h[H_CHUNK] or 0) == c
end

-- The header of job `id`'s record, nil when there is none.
local function header(jobsKey, id)
  local record = redis.call('HGET', jobsKey, id)
  if record then return (decode(record)) end
  return nil
end

-- The key of group `other` of the same topic and partition as group `group`, whose key is `base`.
local function siblingKey(base, group, other)
  return string.sub(base, 1, #base - #group) .. other
end

-- Whose slot `id` of bucket field `field` is, seen from group `group` (key `base`), when the
-- group's first chunk is in the bucket: 'mine' (a job of that chunk), 'other' (of another group's
-- first chunk kept in the bucket, whose name hashes alike) or 'stale' (a job no longer there:
-- purged, or moved to another group or to a zset).
local function slotOwner(jobsKey, base, field, group, id)
  local h = header(jobsKey, id)
  if inChunk(h, group, 0) then return 'mine' end
  local other = h and h[H_GROUP]
  if other and (h[H_CHUNK] or 0) == 0 and bucketField(other) == field
    and redis.call('EXISTS', siblingKey(base, group, other)) == 0 then return 'other' end
  return 'stale'
end

-- Moves the jobs of group `group` kept in its bucket to its first zset `base`, each at its place
-- (its slot), and empties the slots of jobs no longer there. At most BUCKET_SLOTS jobs.
local function promote(jobsKey, base, group)
  local key, field, slots = bucketOf(jobsKey, group)
  if #slots == 0 then return end
  for i, id in ipairs(slots) do
    if id ~= '' then
      local owner = slotOwner(jobsKey, base, field, group, id)
      if owner == 'mine' then redis.call('ZADD', base, i, id) end
      if owner ~= 'other' then slots[i] = '' end
    end
  end
  writeSlots(jobsKey, key, field, slots, true)
end

-- Makes stored job `id` (header `h`, placed by placeInGroup) a member of its group's chunk, after
-- the members there; a job already in it keeps its place. The first chunk stays in the group's
-- bucket while the job fits there (see "Small groups"), else goes to its zset.
local function addToGroup(jobsKey, base, id, h)
  local group = h[H_GROUP]
  if not group then return end
  local c = h[H_CHUNK] or 0
  if c == 0 and redis.call('EXISTS', base) == 0 then
    local key, field, slots = bucketOf(jobsKey, group)
    local existed, other, present, kept = #slots > 0, false, false, false
    for i, slot in ipairs(slots) do
      if slot ~= '' then
        local owner = slotOwner(jobsKey, base, field, group, slot)
        if owner == 'stale' then
          slots[i] = ''
        else
          kept = true
          if owner == 'other' then other = true elseif slot == id then present = true end
        end
      end
    end
    if not kept then slots = {} end -- every slot empty: the places start over, as in an emptied zset
    local value = table.concat(slots, ',')
    if present then
      writeSlots(jobsKey, key, field, slots, existed)
      return
    end
    if not other and #slots < BUCKET_SLOTS and #value + 1 + #id <= BUCKET_VALUE_BYTES then
      slots[#slots + 1] = id
      writeSlots(jobsKey, key, field, slots, existed)
      return
    end
    writeSlots(jobsKey, key, field, slots, existed)
    -- to the zset, with every job of the group kept in the bucket: also when the field holds
    -- another group's slots too (a job that moved there from this group keeps its slot), or the
    -- jobs left in the bucket would be seen by no list and no cancel once the zset exists
    promote(jobsKey, base, group)
  end
  local key = chunkKey(base, c)
  if redis.call('ZSCORE', key, id) then return end
  redis.call('ZADD', key, lastPlace(key) + 1, id)
end

-- Takes `id`, which is no longer a member (not inChunk), out of chunk `c` of group `group`: out
-- of the chunk's zset, and for the first chunk out of its slot in the group's bucket too (unless
-- the slot is now another group's). Returns 1 when it was in either, else 0.
local function leaveChunk(jobsKey, base, group, c, id)
  local removed = redis.call('ZREM', chunkKey(base, c), id)
  if c ~= 0 then return removed end
  local key, field, slots = bucketOf(jobsKey, group)
  for i, slot in ipairs(slots) do
    if slot == id and slotOwner(jobsKey, base, field, group, id) == 'stale' then
      slots[i] = ''
      writeSlots(jobsKey, key, field, slots, true)
      return 1
    end
  end
  return removed
end

-- The members of chunk `c` of group `group` after place `cursor` ('-inf': from the first), at
-- most `limit`, as ZRANGEBYSCORE ... WITHSCORES replies them: id, place, id, place, ... Members
-- may have left the group since (the caller checks with inChunk).
local function chunkMembers(jobsKey, base, group, c, cursor, limit)
  if c ~= 0 or redis.call('EXISTS', base) == 1 then
    return redis.call('ZRANGEBYSCORE', chunkKey(base, c), '(' .. cursor, '+inf', 'WITHSCORES', 'LIMIT', 0, limit)
  end
  local _, _, slots = bucketOf(jobsKey, group)
  local after = tonumber(cursor) or 0
  local members = {}
  for i, id in ipairs(slots) do
    if i > after and id ~= '' and #members < 2 * limit then
      members[#members + 1] = id
      members[#members + 1] = tostring(i)
    end
  end
  return members
end

-- After members of group `group` were taken out, or its cancel ended: moves the group's oldest
-- chunk past the chunks left empty, and drops the range when no chunk is left and no cancel is
-- under way (whose chunks must keep their numbers), so an emptied group leaves no key behind.
-- Each chunk is passed once over the group's life.
local function tidyGroup(jobsKey, base, group)
  local low, cur = groupChunks(jobsKey, group)
  if cur == 0 then return end
  local from = low
  while low < cur and redis.call('EXISTS', chunkKey(base, low)) == 0 do low = low + 1 end
  if low == cur and redis.call('EXISTS', chunkKey(base, cur)) == 0
    and not redis.call('HGET', jobsKey, GROUP_CANCEL_FIELD .. group) then
    redis.call('HDEL', jobsKey, GROUP_CHUNKS_FIELD .. group)
  elseif low ~= from then
    redis.call('HSET', jobsKey, GROUP_CHUNKS_FIELD .. group, low .. ' ' .. cur)
  end
end

-- At a cancel's mark: the last chunk of group `group` (whose range is low, cur) that holds jobs
-- that joined before the mark, -1 when none does. A newest chunk with members is closed: the next
-- job to join opens the one after it, so every later job is in a later chunk.
local function closeChunks(jobsKey, base, group, low, cur)
  -- a first chunk kept in the bucket moves to its zset, where the cancel's steps find it
  if cur == 0 and redis.call('EXISTS', base) == 0 then promote(jobsKey, base, group) end
  if redis.call('EXISTS', chunkKey(base, cur)) == 0 then return cur - 1 end
  redis.call('HSET', jobsKey, GROUP_CHUNKS_FIELD .. group, low .. ' ' .. (cur + 1))
  return cur
end

-- Creates job `id` due at `due` with options `o` ({ max, ttr, backoff, url, group }, false:
-- the topic's) and body `body`, as lua/addJobs-5.lua adds one, joining the group whose key is
-- `groupKey` when it has a group; unless a job of that id exists that is not cancelled (a
-- cancelled one is made anew; in the same group it keeps its place). `k`: jobs, bodies, delayed,
-- done. Returns true when it created the job, and then, when it made anew a cancelled job of another
-- group (or of a group when it has none now), { group, chunk } it left (false otherwise): that
-- group's key is not the call's, so the caller takes the job out with lua/leaveGroup-2.lua.
local function createJob(k, groupKey, id, due, now, o, body)
  local record = redis.call('HGET', k.jobs, id)
  local old, oldChunk = false, nil
  if record then
    local h = decode(record)
    if h[H_STATE] ~= CANCELLED then return false end
    redis.call('ZREM', k.done, id)
    old, oldChunk = h[H_GROUP], h[H_CHUNK]
  end
  local h = { PENDING, due, now, 0, o.max, o.ttr, o.backoff, o.url, false, now, false, false, false, 0, 0, o.group }
  placeInGroup(k.jobs, groupKey, h, old, oldChunk)
  store(k.jobs, k.bodies, id, h, body, record ~= false)
  redis.call('ZADD', k.delayed, due, id)
  addToGroup(k.jobs, groupKey, id, h)
  if old and old ~= h[H_GROUP] then return true, { old, oldChunk or 0 } end
  return true, false
end

-- Appends { id, group, chunk } to `lefts` when createJob (which made job `id`) says the job left a
-- group; passes `created` on.
local function noteLeft(lefts, id, created, left)
  if left then lefts[#lefts + 1] = { id, left[1], left[2] } end
  return created
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

-- Schedule records (lua/*Schedule*.lua): in the schedules hash, per schedule id, a msgpack array
-- in these slots. The version comes from the hash's counter (SEQ_FIELD), as a job's does. NEXT and
-- NEXT_ID: the pending occurrence's time and job id (false: paused, or no run left). LAST: the
-- latest occurrence handed over (due, so left to run, or skipped). MAX..GROUP: each occurrence's
-- options, as a job header holds them. SPEC: the definition as lib/engine/schedules.ts writes it
-- (JSON, opaque here). BODY: each occurrence's body (JSON text).
local S_VERSION, S_NEXT, S_NEXT_ID, S_LAST, S_MAX, S_TTR, S_BACKOFF, S_URL, S_GROUP, S_CREATED, S_UPDATED, S_SPEC, S_BODY =
  1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13

-- The options record `r` gives each occurrence, as createJob takes them.
local function occurrenceOptions(r)
  return { max = r[S_MAX], ttr = r[S_TTR], backoff = r[S_BACKOFF], url = r[S_URL], group = r[S_GROUP] }
end

-- Schedule `id`'s record as the scripts reply it: the id, then the slots in order (body false
-- when `withBody` is not set). Mirrored by ScheduleView in lib/engine/scripts.ts.
local function scheduleView(id, r, withBody)
  local body = false
  if withBody then body = r[S_BODY] end
  return { id, r[S_VERSION], r[S_NEXT], r[S_NEXT_ID], r[S_LAST], r[S_MAX], r[S_TTR], r[S_BACKOFF], r[S_URL], r[S_GROUP],
    r[S_CREATED], r[S_UPDATED], r[S_SPEC], body }
end
