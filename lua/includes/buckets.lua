--[[
  Small groups (groups: see includes/groups.lua). While a group's first chunk holds few jobs
  (BUCKET_SLOTS, and their ids fit in BUCKET_VALUE_BYTES), it is kept not in a zset of its own (about 120 bytes of key for a group of
  1) but in a bucket shared with other small groups of the topic and partition: a hash whose
  field is 4 bytes of the SHA-1 of the group's name, and whose value lists the ids comma-separated
  in slots (ids never hold ','). A job's place there is its slot, 1 to BUCKET_SLOTS; a slot
  emptied by a leave stays empty until the field empties. Chunk 0 of a group is in its bucket
  exactly when its zset (the group's key) does not exist. A job that would not fit, and the first
  step of a cancel (closeChunks), move the group's jobs to its zset at the places they had
  (promote), so cursors carry over. Groups whose names hash alike share a field: the one that
  finds the field holding another group's jobs goes to its zset at once. Each job's record names
  its group, so a member that is not the group's (or no longer in it) is told apart as in a zset
  (inChunk). Buckets are `<jobs key>#gb<n>` and split one at a time as they fill (linear hashing:
  bucket `split` of 2^level splits into itself and `split + 2^level`), so they stay listpacks:
  a bucket whose turn to split has not come holds twice the groups of one that split this round,
  up to 2 * BUCKET_LOAD on average, which must stay under hash-max-listpack-entries (512 by
  default in Redis, ElastiCache and MemoryDB; zsets' limit is 128): a hash past it turns into a
  hashtable, several times the bytes a field, and stays one. With 96 the fullest bucket seen while
  1,000,000 groups of 1 came one by one held 232 (a simulation of this rule). A split writes both
  halves anew, so a bucket that went past a lower limit (a server set to less) is a listpack again
  after its split.
]]
local Buckets = {}
do
  -- A small group's first chunk kept in a shared bucket: at most this many jobs, in a value of at
  -- most hash-max-listpack-value (64) bytes, so that a bucket stays a listpack; buckets split when
  -- they hold this many groups on average (the fullest hold about twice as many, far under
  -- hash-max-listpack-entries, 512 by default: see above). The jobs hash field GROUP_BUCKETS_FIELD
  -- holds 'level split count' (absent: no group in a bucket).
  local BUCKET_SLOTS, BUCKET_VALUE_BYTES, BUCKET_LOAD = 3, 64, 96
  local GROUP_BUCKETS_FIELD = '#gbuckets'

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

  Buckets.BUCKET_SLOTS, Buckets.BUCKET_VALUE_BYTES = BUCKET_SLOTS, BUCKET_VALUE_BYTES
  Buckets.bucketField, Buckets.bucketOf, Buckets.writeSlots = bucketField, bucketOf, writeSlots
end
