--[[
  Prioritized ready jobs (H_PRIORITY in includes/job.lua) of a topic that is not a flow topic, in
  one partition. A ready job with a priority is not in the ready list but in a zset whose name
  derives from the jobs hash's (mirrored by prioKey in lib/engine/keys.ts):
    <jobs>#prio  ZSET  id -> (1000 - priority) * BAND + HALF + its place in arrival order: the
                       highest priority first, the first to become ready first within one; a
                       give-back goes before the first of its priority (pushHead)
  COUNT_FIELD in the jobs hash counts the zset's ids; the claim reads it with the pause mark, in the
  HMGET it makes anyway, so a partition holding no prioritized job pays no command for them. While
  it is not 0 the ready list holds PRIO_MARK (not an id: ids never hold '#'), so the ready list is never
  empty while prioritized jobs are ready: the counts that pass over partitions whose ready list is
  empty (LLEN) see them without a command of their own. A claim takes the mark off and puts it back
  while the count is not 0; a cancelled or rescheduled job's id stays in the zset (counted) until a
  claim meets it, as it stays in the ready list.
  A flow topic (includes/flow.lua) keeps a key's prioritized ready ids in a zset beside its lane,
  scored the same way (Flow.lanePrioKey); the helpers taking a zset's name (`zkey`) serve both.
]]
local Priority = {}
do
  local COUNT_FIELD, SEQ_FIELD, PRIO_MARK = '#pready', '#pseq', '#p'
  -- 2^41 places a priority: 2001 priorities (-1000..1000) times 2^41 stay below 2^53, where a
  -- double holds every integer; HALF of them for give-backs before the first, HALF for arrivals.
  local BAND, HALF = 2 ^ 41, 2 ^ 40
  local POSITIVE_END = 1000 * BAND -- scores below: priorities above 0 (claimed before the ready list)
  local NEGATIVE_START = 1001 * BAND -- scores from here: priorities below 0 (claimed after it)

  local function prioKey(jobsKey)
    return jobsKey .. '#prio'
  end

  local function bandOf(priority)
    return (1000 - priority) * BAND
  end

  -- Counts `added` new ids in the zset of `jobsKey`; the first puts the mark at the head of the
  -- ready list `readyKey`.
  local function counted(jobsKey, readyKey, added)
    if added == 0 then return end
    if redis.call('HINCRBY', jobsKey, COUNT_FIELD, string.format('%d', added)) == added then redis.call('LPUSH', readyKey, PRIO_MARK) end
  end

  -- Adds ready ids `ids` (priorities `priorities`) to zset `zkey` after those of their priority, in
  -- this order (their places in arrival order counted in the jobs hash `jobsKey`). Returns how many
  -- were new.
  local function addTail(zkey, jobsKey, ids, priorities)
    local last = redis.call('HINCRBY', jobsKey, SEQ_FIELD, string.format('%d', #ids))
    local args = {}
    for i = 1, #ids do
      args[#args + 1] = string.format('%d', bandOf(priorities[i]) + HALF + (last - #ids + i) % HALF)
      args[#args + 1] = ids[i]
    end
    return redis.call('ZADD', zkey, unpack(args))
  end

  -- Adds ready id `id` (priority `priority`) to zset `zkey` before the first of its priority (a
  -- give-back). Returns 1 when it was new.
  local function addHead(zkey, id, priority)
    local low = bandOf(priority)
    local first = redis.call('ZRANGEBYSCORE', zkey, string.format('%d', low), string.format('%d', low + BAND - 1), 'LIMIT', '0', '1', 'WITHSCORES')
    local score = first[2] and tonumber(first[2]) - 1 or low + HALF
    return redis.call('ZADD', zkey, string.format('%d', score), id)
  end

  -- Ready ids `ids` (priorities `priorities`) after those of their priority, in this order.
  local function pushTail(jobsKey, readyKey, ids, priorities)
    counted(jobsKey, readyKey, addTail(prioKey(jobsKey), jobsKey, ids, priorities))
  end

  -- Ready id `id` (priority `priority`) before the first of its priority (a give-back).
  local function pushHead(jobsKey, readyKey, id, priority)
    counted(jobsKey, readyKey, addHead(prioKey(jobsKey), id, priority))
  end

  -- Up to `n` ids of the zset of `jobsKey`: above 0 (`positive`) or below it.
  local function firsts(jobsKey, positive, n)
    if positive then
      return redis.call('ZRANGEBYSCORE', prioKey(jobsKey), '-inf', string.format('(%d', POSITIVE_END), 'LIMIT', '0', string.format('%d', n))
    end
    return redis.call('ZRANGEBYSCORE', prioKey(jobsKey), string.format('%d', NEGATIVE_START), '+inf', 'LIMIT', '0', string.format('%d', n))
  end

  -- Up to `n` ids of the zset of `jobsKey` above 0 (`positive`) or below it, from score `at` (nil:
  -- the first), each followed by its score (a listing's page: lua/listReady-4.lua).
  local function fromScore(jobsKey, positive, at, n)
    local low, high = positive and '-inf' or string.format('%d', NEGATIVE_START), '+inf'
    if positive then high = '(' .. string.format('%d', POSITIVE_END) end
    if at then low = string.format('%d', at) end
    return redis.call('ZRANGEBYSCORE', prioKey(jobsKey), low, high, 'WITHSCORES', 'LIMIT', '0', string.format('%d', n))
  end

  -- Takes ids `ids` (a claim looked at them) off the zset of `jobsKey`, from a count of `count`;
  -- `marked`: the claim took the mark off the ready list `readyKey` (it goes back while ids are
  -- left). Returns the count left.
  local function taken(jobsKey, readyKey, ids, count, marked)
    if #ids > 0 then
      local gone = redis.call('ZREM', prioKey(jobsKey), unpack(ids))
      count = count - gone
      if count <= 0 then
        redis.call('HDEL', jobsKey, COUNT_FIELD)
        count = 0
        -- the mark the claim did not reach goes too when it is the ready list's head (it mostly is)
        if not marked and redis.call('LINDEX', readyKey, '0') == PRIO_MARK then redis.call('LPOP', readyKey) end
      elseif gone > 0 then
        redis.call('HSET', jobsKey, COUNT_FIELD, string.format('%d', count))
      end
    end
    if count > 0 and marked then redis.call('LPUSH', readyKey, PRIO_MARK) end
    return count
  end

  Priority.COUNT_FIELD, Priority.PRIO_MARK, Priority.prioKey = COUNT_FIELD, PRIO_MARK, prioKey
  Priority.pushTail, Priority.pushHead, Priority.firsts, Priority.taken = pushTail, pushHead, firsts, taken
  Priority.addTail, Priority.addHead, Priority.fromScore, Priority.POSITIVE_END = addTail, addHead, fromScore, POSITIVE_END
end
