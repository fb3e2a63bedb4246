--[[
  Flow control per key, on a flow topic (lib/engine/flow.ts). A flow topic lives in one partition;
  its keys' state lives beside its jobs, under names derived from the topic's jobs hash (so in its
  hash slot):
    <jobs>#flow        HASH key -> state { running, inRing 0|1, held 0|1, tat, conc, head }:
                       running attempts, whether the key is in the ring, whether its pace holds it
                       in the wait zset, its pace's next start (GCRA, ms), the concurrency it was
                       last claimed under (0: none), and its first ready id (false: none); stored
                       packed by struct (packState). Deleted when all are at rest: an idle key
                       costs nothing.
    <jobs>#fconf       HASH key -> msgpack { conc, count, perMs, burst, paused 0|1, by, at } (false:
                       the topic's default): the key's pinned limits and pause, set over the API
                       only, with the name of the API key that last changed them (false: none) and when (ms).
    <jobs>#lanes       LIST the ring: keys that may have a claimable job, each at most once; claims
                       take a key off the head and put it back at the tail (round the keys).
    <jobs>#lane:<key>  LIST the key's ready ids after its head, in the order they became ready: a
                       key with one ready job has no lane (its id is the head; a Redis key costs
                       about 190 bytes). A lane holds ids only while the head is set.
    <jobs>#fwait       ZSET key -> when its pace lets it start again; the sweep puts it back in
                       the ring then (or deletes an idle key's state once its pace has run out).
    <jobs>#lanep:<key> ZSET the key's ready ids that have a priority (H_PRIORITY), scored as
                       includes/priority.lua scores a plain topic's: while it holds ids the key's
                       head is LANE_MARK (not an id: ids never hold '#'; the lane then holds all its
                       plain ids), so the ring, the limits and the counts see the key as they see
                       any key with a ready id, and a key without prioritized jobs pays nothing
                       for them. A claim of a marked key takes its ids above 0 first, highest
                       first, then its lane, then those below 0; the mark goes when the zset is
                       empty, the lane's first becoming the head again.
  The key of a job is its header's H_KEY: '' for a job of a flow topic added without one (the
  jobs without a key share the key ''), false for a job of any other topic. A job counts in its
  key's `running` from its claim until its attempt ends in any way (ack, failure, timeout,
  cancel, give-back, a hold-back at start): flowLeave, called wherever a running job stops running.
  READY_FIELD in <jobs>#flow counts the ids in all lanes (GET /topics' `ready`): moveDue adds what
  it routes, a claim takes off what it took, a give-back or hold-back adds its one.
  PAUSED_FIELD in a topic's jobs hash (any topic, each partition): the topic is paused.
]]
--- @include "call"
--- @include "job"
--- @include "priority"
local Flow = {}
do
  local onEachCall = Call.onEachCall
  local H_KEY, H_PRIORITY = Job.H_KEY, Job.H_PRIORITY
  local LANE_MARK = Priority.PRIO_MARK

  local PAUSED_FIELD = '#paused'
  -- PINNED_FIELD in a flow topic's jobs hash: some key has pinned limits or a pause (<jobs>#fconf is
  -- not empty), kept by setFlowKey-1 so that a claim or a start reads it with the pause mark
  local PINNED_FIELD = '#pinned'
  local READY_FIELD = '#ready' -- no key holds '#'
  -- Written with every write of key states: a value longer than hash-max-listpack-value (64 bytes by
  -- default) keeps <jobs>#flow a hashtable (Redis never turns it back into a listpack), so a key's
  -- state is found in O(1); a listpack of up to 128 keys is scanned field by field on every read and
  -- write (about a quarter of a flow claim's and ack's Redis time at 100 keys).
  local DICT_FIELD = '#dict'
  local DICT_VALUE = 'this field keeps the hash a hashtable: its value is longer than hash-max-listpack-value'
  local F_RUNNING, F_RING, F_HELD, F_TAT, F_CONC, F_HEAD = 1, 2, 3, 4, 5, 6
  local C_CONC, C_COUNT, C_PER, C_BURST, C_PAUSED, C_BY, C_AT = 1, 2, 3, 4, 5, 6, 7

  -- The flow keys of the topic whose jobs hash is `jobsKey`, made once (an ack or a sweep asks once a
  -- job): names derived from the jobs hash's alone, so they are kept across calls, one set a topic's
  -- partition (topics are the configuration's, their jobs hashes few).
  local flowKeysOf = {}

  local function flowKeys(jobsKey)
    local f = flowKeysOf[jobsKey]
    if not f then
      f = { jobs = jobsKey, state = jobsKey .. '#flow', conf = jobsKey .. '#fconf', ring = jobsKey .. '#lanes', wait = jobsKey .. '#fwait' }
      flowKeysOf[jobsKey] = f
    end
    return f
  end

  local function laneKey(f, key)
    return f.jobs .. '#lane:' .. key
  end

  local function lanePrioKey(f, key)
    return f.jobs .. '#lanep:' .. key
  end

  -- Write-behind within one script call (flowBatch ... flowFlush): the sweep, which touches many keys
  -- (timed-out attempts' slots, due jobs routed, keys its pace lets go), reads each key's state once
  -- and writes the states it changed, and the keys it puts at the ring's tail, once at the end. The
  -- states live in `batch.states[<state hash>]` = { f, st = { key -> state }, order = { keys changed,
  -- in order }, changed = { key -> true } } (batchOf); the ring's pushes in `batch.tails[<ring>]` =
  -- { keys } (ringPush). Off (false) in every other script: there each save writes at once (the
  -- claim and the ack keep their own tables: claimGather, flowLeaveMany).
  local batch = false
  onEachCall(function() batch = false end)

  local function flowBatch()
    batch = { states = {}, stateOrder = {}, tails = {}, tailOrder = {} }
  end

  local function batchOf(f)
    local b = batch.states[f.state]
    if not b then
      b = { f = f, st = {}, order = {}, changed = {} }
      batch.states[f.state] = b
      batch.stateOrder[#batch.stateOrder + 1] = b
    end
    return b
  end

  local function newFlowState()
    return { 0, 0, 0, 0, 0, false }
  end

  -- A state as the #flow hash keeps it: running (uint16: at most the topic's concurrency, 10,000),
  -- a byte of flags (inRing + 2 * held + 4 when a tat follows), tat (double) only when it is not 0
  -- (the key has started under a pace), conc (uint16), then the head id's bytes (none: no head): 5
  -- or 13 bytes before the head, where cmsgpack takes 7 or 15. struct packs and unpacks it in one C
  -- call each: about 8,000 instructions for a pack and an unpack against cmsgpack's 12,000 (a claim
  -- and an ack each read and write one a job).
  local STATE_PACED, STATE_PACED_AT = '<HBdH', 14 -- with a tat; the head from byte 14
  local STATE_UNPACED, STATE_UNPACED_AT = '<HBH', 6

  -- A state packed from its parts (packState's, for a caller that keeps them in locals): the head's
  -- bytes packed with the rest in one call (`c0`: the whole string).
  local function packParts(running, ring, held, tat, conc, head)
    local flags = ring + 2 * held
    if running > 65535 then running = 65535 end
    if tat ~= 0 then
      if head then return struct.pack('<HBdHc0', running, flags + 4, tat, conc, head) end
      return struct.pack(STATE_PACED, running, flags + 4, tat, conc)
    end
    if head then return struct.pack('<HBHc0', running, flags, conc, head) end
    return struct.pack(STATE_UNPACED, running, flags, conc)
  end

  local function packState(st)
    return packParts(st[F_RUNNING], st[F_RING], st[F_HELD], st[F_TAT], st[F_CONC], st[F_HEAD])
  end

  -- The parts of the state packed in `raw` (false or nil: a new one at rest): running, inRing, held,
  -- tat, conc, head (false: none).
  local function stateParts(raw)
    if not raw then return 0, 0, 0, 0, 0, false end
    local running, flags, tat, conc, headAt
    if string.byte(raw, 3) >= 4 then
      running, flags, tat, conc = struct.unpack(STATE_PACED, raw)
      flags, headAt = flags - 4, STATE_PACED_AT
    else
      running, flags, conc = struct.unpack(STATE_UNPACED, raw)
      tat, headAt = 0, STATE_UNPACED_AT
    end
    local ring = flags % 2
    return running, ring, (flags - ring) / 2, tat, conc, #raw >= headAt and string.sub(raw, headAt) or false
  end

  -- The state packed in `raw` (false or nil: a new one at rest).
  local function unpackState(raw)
    return { stateParts(raw) }
  end

  -- Key `key`'s state (a new one at rest when it has none).
  local function flowState(f, key)
    if batch then
      local b = batchOf(f)
      local st = b.st[key]
      if not st then
        local raw = redis.call('HGET', f.state, key)
        st = unpackState(raw)
        b.st[key] = st
      end
      return st
    end
    local raw = redis.call('HGET', f.state, key)
    return unpackState(raw)
  end

  -- At rest: nothing running or ready, not in the ring or the wait zset.
  local function atRest(st)
    return st[F_RUNNING] <= 0 and st[F_RING] == 0 and st[F_HELD] == 0 and not st[F_HEAD]
  end

  -- Marks key `key` of batch state hash `b` for flowFlush to write.
  local function markChanged(b, key)
    if not b.changed[key] then
      b.changed[key] = true
      b.order[#b.order + 1] = key
    end
  end

  -- Keeps state `st` as key `key`'s in the batch, to be written (or deleted, at rest) by flowFlush.
  local function batchSave(f, key, st)
    local b = batchOf(f)
    b.st[key] = st
    markChanged(b, key)
  end

  -- Whether key `key`'s state `st` is to be deleted: at rest, its pace run out by `now`. At rest with
  -- only its pace left, it is held in the wait zset instead (the sweep deletes it when the pace has
  -- run out) and kept.
  local function spent(f, key, st, now)
    if not atRest(st) then return false end
    if st[F_TAT] <= now then return true end
    st[F_HELD] = 1
    redis.call('ZADD', f.wait, st[F_TAT], key)
    return false
  end

  -- Writes key `key`'s state, or deletes it when it is at rest and its pace has run out by `now`
  -- (batch: marks it for flowFlush, and a deleted one reads as new from then on).
  local function saveFlowState(f, key, st, now)
    if spent(f, key, st, now) then
      if batch then
        batchSave(f, key, newFlowState())
        return
      end
      redis.call('HDEL', f.state, key)
      return
    end
    if batch then
      batchSave(f, key, st)
      return
    end
    redis.call('HSET', f.state, key, packState(st), DICT_FIELD, DICT_VALUE)
  end

  -- Puts `key` at the tail of the ring (batch: at flowFlushRing, in order).
  local function ringPush(f, key)
    if not batch then
      redis.call('RPUSH', f.ring, key)
      return
    end
    local t = batch.tails[f.ring]
    if not t then
      t = { keys = {} }
      batch.tails[f.ring] = t
      batch.tailOrder[#batch.tailOrder + 1] = f.ring
    end
    t.keys[#t.keys + 1] = key
  end

  -- Calls redis.call(command, key, <args...>) for `args` (from index `from`, 1 by default) in slices
  -- (unpack's limit); the last reply.
  local function callSliced(command, key, args, from)
    local reply
    for i = from or 1, #args, 4000 do
      reply = redis.call(command, key, unpack(args, i, math.min(#args, i + 3999)))
    end
    return reply
  end

  -- Adds key `key`'s state `st` to a write of states (writeStates): its key to `dels` when `drop` (at
  -- rest), else the key and the state packed to `sets`.
  local function addState(sets, dels, key, st, drop)
    if drop then
      dels[#dels + 1] = key
    else
      sets[#sets + 1] = key
      sets[#sets + 1] = packState(st)
    end
  end

  -- Writes key states: `sets` (key, packed state, ...) in one HSET with DICT_FIELD, the keys `dels`
  -- (at rest) deleted in one HDEL (each in slices of 4,000 arguments: pairs stay whole).
  local NO_KEYS = {} -- (read only) writeStates' `dels` when there are none
  local function writeStates(f, sets, dels)
    if #sets > 0 then
      sets[#sets + 1] = DICT_FIELD
      sets[#sets + 1] = DICT_VALUE
      callSliced('HSET', f.state, sets)
    end
    if #dels > 0 then callSliced('HDEL', f.state, dels) end
  end

  -- Pushes the keys put at the ring's tail so far (batch).
  local function flowFlushRing()
    if not batch then return end
    for _, ring in ipairs(batch.tailOrder) do
      local t = batch.tails[ring]
      if #t.keys > 0 then
        callSliced('RPUSH', ring, t.keys)
        t.keys = {}
      end
    end
  end

  -- Writes what the batch changed (the ring's pushes, then the states: one HSET and one HDEL a hash)
  -- and ends it.
  local function flowFlush()
    if not batch then return end
    flowFlushRing()
    for _, b in ipairs(batch.stateOrder) do
      local sets, dels = {}, {}
      local order = b.order
      for i = 1, #order do
        local key = order[i]
        local st = b.st[key]
        addState(sets, dels, key, st, atRest(st))
      end
      writeStates(b.f, sets, dels)
    end
    batch = false
  end

  -- Key `key`'s pinned limits and pause, or false.
  local function flowConf(f, key)
    local raw = redis.call('HGET', f.conf, key)
    if raw then return cmsgpack.unpack(raw) end
    return false
  end

  -- Whether a key (state `st`) belongs back in the ring: out of it, not held by its pace, with a
  -- ready id and under the concurrency it was last claimed under. The claim checks the rest.
  local function claimable(st)
    if st[F_RING] == 1 or st[F_HELD] == 1 or not st[F_HEAD] then return false end
    return not (st[F_CONC] > 0 and st[F_RUNNING] >= st[F_CONC])
  end

  -- Puts key `key` (state `st`) in the ring when it is claimable.
  local function ringIfClaimable(f, key, st)
    if not claimable(st) then return end
    ringPush(f, key)
    st[F_RING] = 1
  end

  -- Makes key `key`'s (state `st`) head the mark of its prioritized ids, the old head first in its lane.
  local function markHead(f, key, st)
    if st[F_HEAD] == LANE_MARK then return end
    if st[F_HEAD] then redis.call('LPUSH', laneKey(f, key), st[F_HEAD]) end
    st[F_HEAD] = LANE_MARK
  end

  -- Puts ready id `id` (priority `priority`: nil, false or 0 for none) first among key `key`'s (state
  -- `st`) of its priority: its head, the old head first in its lane; with a priority, before the
  -- first of it in the key's prioritized ids; without one while the key has some, first in its lane.
  local function pushFront(f, key, st, id, priority)
    if priority and priority ~= 0 then
      Priority.addHead(lanePrioKey(f, key), id, priority)
      markHead(f, key, st)
    elseif st[F_HEAD] == LANE_MARK then
      redis.call('LPUSH', laneKey(f, key), id)
    else
      if st[F_HEAD] then redis.call('LPUSH', laneKey(f, key), st[F_HEAD]) end
      st[F_HEAD] = id
    end
  end

  -- A running job of a flow topic (header `h`) stops running: its key's slot comes back, and the key
  -- goes back in the ring when it has ready jobs; with `back`, the job is ready again, first among its
  -- key's (a give-back). No-op for a job of another topic.
  local function flowLeave(jobsKey, h, now, back)
    local key = h[H_KEY]
    if not key then return end
    local f = flowKeys(jobsKey)
    local st = flowState(f, key)
    st[F_RUNNING] = math.max(0, st[F_RUNNING] - 1)
    if back then pushFront(f, key, st, back, h[H_PRIORITY]) end
    ringIfClaimable(f, key, st)
    saveFlowState(f, key, st, now)
  end

  -- A claim's keys' states (lua/claimFlow-6.lua, more than one job wanted): read many in one HMGET
  -- (gatherStates; raws: as stored, false for none), each unpacked when its key is visited (by the
  -- visit itself) and packed when the visit ends (the claim's saveVisit: to `sets`, or to `dels` at rest, and
  -- back in raws, so a key visited twice, back in the ring and taken again, keeps its changes), all
  -- written at the end (gatheredWrite: one HSET, one HDEL; a key visited twice is in them twice, the
  -- later write last); the keys put back at the ring's tail wait in `tails` for the next take
  -- (gatheredTails). The write-behind batch above does the same for the scripts that also give slots
  -- back and route due jobs; a claim's is plain tables, its hottest path, where the batch's
  -- bookkeeping cost more Lua work than it saved.
  local function claimGather(f)
    return { f = f, raws = {}, sets = {}, dels = {}, tails = {} }
  end

  local function gatherStates(g, keys)
    -- (numeric loops: ipairs costs a C call a step, on the path every flow job takes)
    local wanted, raws = {}, g.raws
    for i = 1, #keys do
      local key = keys[i]
      if raws[key] == nil then wanted[#wanted + 1] = key end
    end
    for i = 1, #wanted, 1000 do
      local last = math.min(#wanted, i + 999)
      local got = redis.call('HMGET', g.f.state, unpack(wanted, i, last))
      for j = i, last do raws[wanted[j]] = got[j - i + 1] or false end
    end
  end

  local function gatheredTails(g)
    if #g.tails > 0 then
      callSliced('RPUSH', g.f.ring, g.tails)
      g.tails = {}
    end
  end

  local function gatheredWrite(g)
    gatheredTails(g)
    writeStates(g.f, g.sets, g.dels)
  end

  -- Running jobs of a flow topic stop running, `counts[key]` of each key of `keys` (an ack's, one
  -- entry a key): their slots come back as flowLeave gives them one by one, the states read in one
  -- HMGET; a key in the ring, or one with no ready id that still runs attempts, has its running
  -- count changed in its stored bytes alone, and one left with no attempts, no ready ids and no pace
  -- still to run out is deleted unread; any other key's state is unpacked, changed, and put back in
  -- the ring when it may claim. The states are written in one HSET, those at rest deleted in one
  -- HDEL, the keys put in the ring in one RPUSH (not batch: its tables cost more than they save).
  local function flowLeaveMany(jobsKey, keys, counts, now)
    local f = flowKeys(jobsKey)
    local raws = redis.call('HMGET', f.state, unpack(keys))
    -- the keys deleted and those put in the ring: tables made at their first key (an ack's key
    -- mostly has its running count changed in place)
    local sets, dels, ring = {}, false, false
    for i = 1, #keys do
      local key, raw = keys[i], raws[i]
      local running, flags, headless
      if raw then
        running, flags = struct.unpack('<HB', raw) -- both formats start with them
        running = running - counts[key]
        headless = #raw == (flags >= 4 and STATE_PACED_AT or STATE_UNPACED_AT) - 1
      end
      if raw and (flags % 2 == 1 or (headless and running > 0)) then
        -- in the ring, or still running with nothing ready: the running count changed in place
        if running < 0 then running = 0 end
        sets[#sets + 1] = key
        sets[#sets + 1] = struct.pack('<H', running) .. string.sub(raw, 3)
      elseif raw and headless and (flags == 0 or (flags == 4 and struct.unpack('<d', raw, 4) <= now)) then
        dels = dels or {}
        dels[#dels + 1] = key -- at rest, with no pace or one run out by now (spent): deleted
      else
        local st = unpackState(raw)
        st[F_RUNNING] = math.max(0, st[F_RUNNING] - counts[key])
        if claimable(st) then
          ring = ring or {}
          ring[#ring + 1] = key
          st[F_RING] = 1
        end
        dels = dels or {}
        addState(sets, dels, key, st, spent(f, key, st, now))
      end
    end
    if ring then callSliced('RPUSH', f.ring, ring) end
    writeStates(f, sets, dels or NO_KEYS)
  end

  -- The ids `ids` of a key (a string when it is one, else a list) split by `priorityOf` (id ->
  -- priority): `ids` itself and nil when none has a priority, else a list of those without one, a
  -- list of those with one and their priorities.
  local function splitPrioritized(ids, priorityOf)
    if type(ids) == 'string' then ids = { ids } end
    local plain, pids, priorities = {}, nil, nil
    for i = 1, #ids do
      local p = priorityOf[ids[i]]
      if p then
        if not pids then pids, priorities = {}, {} end
        pids[#pids + 1], priorities[#priorities + 1] = ids[i], p
      else
        plain[#plain + 1] = ids[i]
      end
    end
    return plain, pids, priorities
  end

  -- Puts the due jobs of a flow topic that the sweep routes (batch) in their keys' lanes: `keys`, in
  -- the order their first ids fell due, and `idsOf[key]`, the key's ids in due order (a string when
  -- it is one id, else a list). The keys' states are read in one HMGET (those the batch holds already
  -- stay). A key with a head (in the ring, held, paused or at its cap already) has its ids pushed
  -- behind it in one RPUSH to its lane; one without takes the first as its head (a lone id makes no
  -- lane), the rest in its lane, and goes in the ring when it may claim. `priorityOf` (nil when no
  -- due job has a priority): id -> priority; a key's ids with one go to its prioritized zset, its
  -- head marked (LANE_MARK), its ids without one all to its lane.
  local function flowRoute(jobsKey, keys, idsOf, priorityOf)
    local f = flowKeys(jobsKey)
    local b = batchOf(f)
    local states, wanted, raws = b.st, {}, {}
    for i = 1, #keys do
      local key = keys[i]
      if not states[key] then wanted[#wanted + 1] = key end
    end
    gatherStates({ f = f, raws = raws }, wanted) -- the claim's read of states, into raws
    for i = 1, #keys do
      local key = keys[i]
      local ids, st = idsOf[key], states[key]
      local pids, priorities
      if priorityOf then ids, pids, priorities = splitPrioritized(ids, priorityOf) end
      if pids then
        if not st then
          st = unpackState(raws[key])
          states[key] = st
        end
        Priority.addTail(lanePrioKey(f, key), jobsKey, pids, priorities)
        markHead(f, key, st)
        if #ids > 0 then callSliced('RPUSH', laneKey(f, key), ids) end
        ringIfClaimable(f, key, st)
        markChanged(b, key) -- not at rest: it has a head
      else
        local lone, headed = type(ids) == 'string', false
        if not st then
          -- a stored state with a head is not unpacked: its ids only go behind the head
          local raw = raws[key]
          if raw and #raw >= (string.byte(raw, 3) >= 4 and STATE_PACED_AT or STATE_UNPACED_AT) then
            headed = true
          else
            st = unpackState(raw)
            states[key] = st
          end
        end
        if headed or st[F_HEAD] then
          if lone then redis.call('RPUSH', laneKey(f, key), ids) else callSliced('RPUSH', laneKey(f, key), ids) end
        else
          if lone then
            st[F_HEAD] = ids
          else
            st[F_HEAD] = ids[1]
            callSliced('RPUSH', laneKey(f, key), ids, 2)
          end
          ringIfClaimable(f, key, st)
          markChanged(b, key) -- not at rest: it has a head
        end
      end
    end
  end

  -- A pace: `count` starts `per` ms, with a burst of `burst`; with the GCRA's interval between starts
  -- and the allowance of the burst (ms) worked out once.
  local function flowRate(count, perMs, burst)
    local interval = perMs / count
    return { count = count, perMs = perMs, burst = burst, interval = interval, allowance = (burst - 1) * interval }
  end

  -- The limits in force for a key: its pinned ones (conf) over the defaults `d` ({ conc, rate }).
  -- Returns conc (0: none), rate (flowRate's, or false), paused.
  local function flowLimits(conf, d)
    if not conf then return d.conc, d.rate, false end
    local conc, rate = d.conc, d.rate
    if conf[C_CONC] then conc = conf[C_CONC] end
    if conf[C_COUNT] then rate = flowRate(conf[C_COUNT], conf[C_PER], conf[C_BURST]) end
    return conc, rate, conf[C_PAUSED] == 1
  end

  -- Key `key` as lua/getFlowKey-1.lua and lua/setFlowKey-1.lua reply it: { now, running, ready ids,
  -- pace's next start (ms, whole), pinned concurrency or false, pinned pace count or false, per ms,
  -- burst, paused 0|1, first ready id or false, who last changed the pinned record or false, when (ms) or false }. Mirrored by FlowKeyReply in lib/engine/scripts.ts.
  local function flowView(f, key, now)
    local st = flowState(f, key)
    local conf = flowConf(f, key) or { false, false, false, false, 0 }
    local head = st[F_HEAD]
    local ready = head and 1 + redis.call('LLEN', laneKey(f, key)) or 0
    if head == LANE_MARK then
      -- the first ready id in claim order: the first prioritized above 0, else the lane's, else the
      -- first below 0
      local zkey = lanePrioKey(f, key)
      local first = redis.call('ZRANGE', zkey, '0', '0', 'WITHSCORES')
      ready = ready - 1 + redis.call('ZCARD', zkey)
      head = first[1] and tonumber(first[2]) < Priority.POSITIVE_END and first[1] or redis.call('LINDEX', laneKey(f, key), 0) or first[1] or false
    end
    return { now, st[F_RUNNING], ready, math.ceil(st[F_TAT]), conf[C_CONC], conf[C_COUNT], conf[C_PER], conf[C_BURST], conf[C_PAUSED], head, conf[C_BY] or false, conf[C_AT] or false }
  end

  -- The first ready id of key `key` whose head is LANE_MARK (it has prioritized ids), in claim order
  -- (lua/claimFlow-6.lua): its first prioritized id above 0, else its lane's first (taken off the
  -- lane), else its first below 0. Returns the id (nil: none left), its prioritized zset when it is
  -- one of it (false: of the lane), and whether that zset holds another id.
  local function firstMarked(f, key)
    local zkey = lanePrioKey(f, key)
    local firsts = redis.call('ZRANGE', zkey, '0', '1', 'WITHSCORES')
    if firsts[1] and tonumber(firsts[2]) < Priority.POSITIVE_END then return firsts[1], zkey, firsts[3] ~= nil end
    local id = redis.call('LPOP', laneKey(f, key))
    if id then return id, false, true end
    return firsts[1], zkey, firsts[3] ~= nil
  end

  -- Adds `n` to the count of ids in the lanes.
  local function countReady(f, n)
    if n ~= 0 then redis.call('HINCRBY', f.state, READY_FIELD, string.format('%d', n)) end
  end

  -- Running job `id` (header `h`) of a flow topic is ready again, first among its key's: a
  -- give-back, or a hold-back at start; its key's slot comes back.
  local function flowGiveBack(jobsKey, id, h, now)
    countReady(flowKeys(jobsKey), 1)
    flowLeave(jobsKey, h, now, id)
  end

  -- The topic is paused (PAUSED_FIELD in its jobs hash).
  local function topicPaused(jobsKey)
    return redis.call('HEXISTS', jobsKey, PAUSED_FIELD) == 1
  end

  Flow.PAUSED_FIELD, Flow.PINNED_FIELD, Flow.DICT_FIELD = PAUSED_FIELD, PINNED_FIELD, DICT_FIELD
  Flow.DICT_VALUE, Flow.F_RUNNING, Flow.F_RING, Flow.F_HELD, Flow.F_TAT = DICT_VALUE, F_RUNNING, F_RING, F_HELD, F_TAT
  Flow.F_CONC, Flow.F_HEAD, Flow.C_CONC, Flow.C_COUNT, Flow.C_PER = F_CONC, F_HEAD, C_CONC, C_COUNT, C_PER
  Flow.C_BURST, Flow.C_PAUSED, Flow.C_BY, Flow.C_AT, Flow.flowKeys = C_BURST, C_PAUSED, C_BY, C_AT, flowKeys
  Flow.LANE_MARK, Flow.lanePrioKey, Flow.firstMarked = LANE_MARK, lanePrioKey, firstMarked
  Flow.laneKey, Flow.flowBatch, Flow.packParts, Flow.stateParts = laneKey, flowBatch, packParts, stateParts
  Flow.flowState, Flow.saveFlowState, Flow.ringPush, Flow.flowFlush = flowState, saveFlowState, ringPush, flowFlush
  Flow.flowConf, Flow.ringIfClaimable, Flow.flowLeave = flowConf, ringIfClaimable, flowLeave
  Flow.claimGather, Flow.gatherStates, Flow.gatheredTails = claimGather, gatherStates, gatheredTails
  Flow.gatheredWrite, Flow.flowLeaveMany, Flow.flowRoute = gatheredWrite, flowLeaveMany, flowRoute
  Flow.flowRate, Flow.flowLimits, Flow.flowView, Flow.countReady = flowRate, flowLimits, flowView, countReady
  Flow.flowGiveBack, Flow.topicPaused = flowGiveBack, topicPaused
end
