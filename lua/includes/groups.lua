--[[
  Groups. The jobs of a group in one topic and partition are members of the group's zsets, its
  chunks: the group's key (chunk 0, the key a script is passed), then `<key>#1`, `<key>#2`, ...
  (ids and groups never hold '#'). A job joins the newest chunk, or opens the next when that one
  holds GROUP_CHUNK_SIZE, so every chunk stays a listpack; its score is one more than the chunk's
  highest (a small number: 2 bytes a member where a version takes 5 or 6). So the chunks in turn, each by score, hold the jobs in the
  order they joined. A group cancel closes the newest chunk at its mark (closeChunks): the jobs
  that joined before the mark are the members of the chunks up to that one. The jobs hash field
  GROUP_CHUNKS_FIELD .. group holds 'low cur': the oldest chunk that may have members, and the
  newest; only while the group has chunks past the first, or a cancel under way has closed its
  first (absent: both 0). A job's record says which chunk it is in (H_CHUNK), so that it leaves
  the right one. The chunks' names derive from the key the script is passed: they hash to its
  slot (the partition's tag).
  A small group's first chunk is kept in a bucket instead of its zset: see includes/buckets.lua.
]]
--- @include "job"
--- @include "buckets"
--- @include "groupCancel"
local Groups = {}
do
  local H_GROUP, H_CHUNK, H_HISTORY, header = Job.H_GROUP, Job.H_CHUNK, Job.H_HISTORY, Job.header
  local BUCKET_SLOTS, BUCKET_VALUE_BYTES = Buckets.BUCKET_SLOTS, Buckets.BUCKET_VALUE_BYTES
  local bucketField, bucketOf, writeSlots = Buckets.bucketField, Buckets.bucketOf, Buckets.writeSlots
  local GROUP_CANCEL_FIELD = GroupCancel.GROUP_CANCEL_FIELD

  -- The field of the jobs hash holding a group's range of chunks (not a job: ids never hold '#').
  local GROUP_CHUNKS_FIELD = '#chunks:'
  -- Members of one zset of a group: at most zset-max-listpack-entries (128 by default), so that it
  -- stays a listpack (about 25 bytes a member) and never becomes a skiplist (about 120).
  local GROUP_CHUNK_SIZE = 128

  -- The name of chunk `c` of the group whose key is `base`.
  local function chunkKey(base, c)
    if c == 0 then return base end
    return base .. '#' .. c
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
    -- chunk 0 is not stored, unless a history follows (the header stays an array: no hole)
    if c ~= 0 then h[H_CHUNK] = c elseif h[H_HISTORY] ~= nil then h[H_CHUNK] = false else h[H_CHUNK] = nil end
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
      return redis.call('ZRANGEBYSCORE', chunkKey(base, c), '(' .. cursor, '+inf', 'WITHSCORES', 'LIMIT', '0', string.format('%d', limit))
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

  Groups.groupChunks, Groups.placeInGroup, Groups.inChunk = groupChunks, placeInGroup, inChunk
  Groups.addToGroup, Groups.leaveChunk, Groups.chunkMembers = addToGroup, leaveChunk, chunkMembers
  Groups.tidyGroup, Groups.closeChunks = tidyGroup, closeChunks
end
