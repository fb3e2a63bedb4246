--[[
  Claims up to n ready jobs of a flow topic (includes/flow.lua) for an attempt each, going round
  its keys: takes a key off the head of the ring, claims the first live jobs of its lane (a turn:
  up to 4, or the call's share of each key in the ring when that is larger, never more than the
  call wants), and puts the key back at the tail while it has ids left and room under its limits,
  so one key's backlog never holds back another key's jobs by more than a turn; a turn the call's
  end cut short puts the key back at the head, the rest of its turn for the next claim. A key at its concurrency, paused, or held by its pace leaves
  the ring (a held key waits in the wait zset until its pace lets it go; one at its concurrency
  comes back when a slot returns; a paused one when it is resumed). The topic's running zset
  caps all keys together (ARGV[3]). Claims as lua/claimJobs-7.lua does otherwise: ids whose job
  is gone, cancelled, rescheduled, claimed or moved to another key are taken off and skipped, a
  job whose group is being cancelled is cancelled, and the byte budget stops the claim (the id
  then goes back to the head of its lane). A paused topic claims nothing. Within a key, its
  prioritized ready ids (includes/flow.lua, <jobs>#lanep:<key>) above 0 go first, highest first,
  then its lane, then those below 0; the round of keys is the same as without them.
  KEYS[1] running zset  KEYS[2] jobs hash  KEYS[3] bodies hash  KEYS[4] delayed zset
  KEYS[5] done zset  KEYS[6] the topic's lateness stats hash
  ARGV[1] fixed clock ms or ''  ARGV[2] n, at most this many jobs are claimed
  ARGV[3] max running: claims stop when the running zset holds this many (all keys together)
  ARGV[4] the topic's ttr ms, for jobs that set none  ARGV[5] a random nonce, new for every call
  ARGV[6] byte budget of the records and bodies read  ARGV[7] '1': strict (see claimJobs-7)
  ARGV[8] retention ms of a job cancelled here  ARGV[9] '1': start the attempts claimed
  ARGV[10] the topic's concurrency per key, '' for none
  ARGV[11] the topic's pace per key: count, '' for none  ARGV[12] per ms  ARGV[13] burst
  With ARGV[9] '1' a job whose expiry is at or before now ends as EXPIRED instead of its claim, as
  in claimJobs-7 (counted as skipped and expired; it never took its key's slot).
  Returns { now, taken, skipped, more 0|1, heldUntil or false, expired, items... }: items as claimJobs-7's;
  taken counts the ids taken off lanes; heldUntil is the earliest time at which a key this call
  held by its pace may start again (the caller makes sure a sweep looks then).
  Mirrored by ClaimFlowReply in lib/engine/scripts.ts.
]]
--- @include "codes"
--- @include "clock"
--- @include "job"
--- @include "cancel"
--- @include "groupCancel"
--- @include "claim"
--- @include "flow"
--- @include "lateness"
-- what the includes give that the call uses for each job, as locals (a table lookup fewer a use)
local PENDING = Codes.PENDING
local H_STATE, H_KEY, H_ERROR, H_EXPIRES, decode = Job.H_STATE, Job.H_KEY, Job.H_ERROR, Job.H_EXPIRES, Job.decode
local delayedMember, bodySize, H_PRIORITY = Job.delayedMember, Job.bodySize, Job.H_PRIORITY
local LANE_MARK, firstMarked = Flow.LANE_MARK, Flow.firstMarked
local cancelNow, expireNow = Cancel.cancelNow, Cancel.expireNow
local groupCancelError = GroupCancel.groupCancelError
local cancelledWithGroup, claimOne = Claim.cancelledWithGroup, Claim.claimOne
local DICT_FIELD, DICT_VALUE, packParts = Flow.DICT_FIELD, Flow.DICT_VALUE, Flow.packParts
local stateParts, ringPush, flowConf, gatherStates = Flow.stateParts, Flow.ringPush, Flow.flowConf, Flow.gatherStates
local gatheredTails, flowLimits = Flow.gatheredTails, Flow.flowLimits
local runningKey, jobsKey, bodiesKey, delayedKey = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
-- the keys cancelNow and expireNow take (a job cancelled or expired here, rare): made at their first use
local k = false
local ttrMs = tonumber(ARGV[4])
local late = ARGV[9] == '1' and {} or false
local now = Clock.clock(ARGV[1])
-- the byte budget (Budget.byteBudget's rule, counted inline: a table and a closure fewer a call):
-- the first id always fits unless strict (budgetLoose false)
local budget, budgetLoose, budgetUsed = tonumber(ARGV[6]), ARGV[7] ~= '1', 0
local conc0, rate0 = tonumber(ARGV[10]) or 0, false -- the topic's limits per key
if ARGV[11] ~= '' then rate0 = Flow.flowRate(tonumber(ARGV[11]), tonumber(ARGV[12]), tonumber(ARGV[13])) end
local result = { now, 0, 0, 0, false, 0 }
local n = math.min(tonumber(ARGV[2]), tonumber(ARGV[3]) - redis.call('ZCARD', runningKey))
if n <= 0 then return result end
-- the pause mark, and whether any key has pinned limits, in one read: pinned limits are rare, and
-- when no key has any, no visit reads them
local marks = redis.call('HMGET', jobsKey, Flow.PAUSED_FIELD, Flow.PINNED_FIELD)
if marks[1] then return result end
local f = Flow.flowKeys(jobsKey)
-- the defaults for keys with pinned limits (flowLimits), only when some key has them
local defaults = marks[2] and { conc = conc0, rate = rate0 }

-- Keys visited at most: each visit claims a job or takes a key out of the ring, bar stale ids.
local visits = n * 2 + 16
-- Jobs one visit claims at most: TURN, or the call's share of each key in the ring when that is
-- larger (a few keys cost fewer visits). A key's turn takes up to TURN of its ready jobs before the
-- claim moves on to the next key: claims still go round the keys, and a key's backlog holds another
-- key's jobs back by at most TURN jobs for each key ahead of it in the ring, while the visit's own
-- work (the key's state read and written, the ring's pop and push) is shared by up to TURN jobs
-- (DESIGN.md, "Flow control per key").
local TURN = 4
local quota = n == 1 and 1 or math.min(n, math.max(TURN, math.floor(n / math.max(1, redis.call('LLEN', f.ring)))))
-- Stale ids one visit passes over at most before it moves on to the next key.
local STALE_PER_VISIT = 100
local claimed, taken, stopped = 0, 0, false
local lanePrefix = Flow.laneKey(f, '') -- a key's lane: lanePrefix .. key

-- More than one job wanted: the keys' states gathered for the call (claimGather in
-- includes/flow.lua), written once at its end; one job wanted visits one key, whose state is read
-- and written directly (a table or closure a call costs more than it saves).
local g = n > 1 and Flow.claimGather(f)
-- locals for what every visit reads (a global's or a field's lookup each fewer a job)
local call, raws, stateKey = redis.call, g and g.raws, f.state
-- A turn that a claim's end (or its budget) cut short goes on in the next claim of more than one job
-- (of one, a turn is one job): TURN_FIELD of the state hash holds "<jobs taken> <key>" for that key,
-- left at the ring's head, read with the first keys' states; its visit takes the rest of its turn.
local TURN_FIELD = '#turn'
local turnKey, turnTaken, cutTurn = false, 0, false

-- Takes key `key`'s ready ids (its head `head`, then its lane; a marked head: firstMarked's) until
-- one is claimed. Returns what came of it, then the key's head after it: true (one claimed), false
-- (none left, or the budget stopped the claim: the id is back where it was), 'more' (the visit
-- passed STALE_PER_VISIT stale ids: the key stays).
local function claimFromLane(key, head)
  for _ = 1, STALE_PER_VISIT do
    -- the key's first ready id: its head, which the lane's first refills
    local id = head
    if not id then return false, false end
    local lane = lanePrefix .. key
    local zkey, more
    if id == LANE_MARK then
      id, zkey, more = firstMarked(f, key)
      if not id then return false, false end
    else
      head = call('LPOP', lane) or false
    end
    local record = call('HGET', jobsKey, id)
    local h, inline
    if record then h, inline = decode(record) end
    local live = h and h[H_STATE] == PENDING and (h[H_KEY] or '') == key and not call('ZSCORE', delayedKey, delayedMember(id, key, h[H_PRIORITY]))
    local mark = live and cancelledWithGroup(jobsKey, h)
    local size = record and #record or 0
    if live and not mark then size = size + bodySize(bodiesKey, id, inline) end
    if budgetUsed + size > budget and (taken > 0 or not budgetLoose) then
      -- first among the key's ready ids again
      stopped = true
      if head == LANE_MARK then
        if not zkey then call('LPUSH', lane, id) end
        return false, head
      end
      if head then call('LPUSH', lane, head) end
      return false, id
    end
    budgetUsed = budgetUsed + size
    if zkey then
      call('ZREM', zkey, id)
      -- the zset emptied: the lane's first is the head again
      if not more then head = call('LPOP', lane) or false end
    end
    taken = taken + 1
    if mark then
      h[H_ERROR] = groupCancelError(mark)
      k = k or { jobs = jobsKey, bodies = bodiesKey, delayed = delayedKey, running = runningKey, done = KEYS[5] }
      cancelNow(k, id, h, inline, now, tonumber(ARGV[8]))
      result[3] = result[3] + 1
    elseif not live then
      result[3] = result[3] + 1
    elseif late and h[H_EXPIRES] and h[H_EXPIRES] <= now then
      k = k or { jobs = jobsKey, bodies = bodiesKey, delayed = delayedKey, running = runningKey, done = KEYS[5] }
      expireNow(k, id, h, inline, now, tonumber(ARGV[8]))
      result[3], result[6] = result[3] + 1, result[6] + 1
    else
      h[H_KEY] = key
      result[#result + 1] = claimOne(jobsKey, runningKey, id, h, inline, now, ttrMs, ARGV[5] .. '.' .. taken, late)
      return true, head
    end
  end
  return 'more', head
end

-- Writes key `key`'s state from its parts (gathered: to the call's write; else at once), or deletes
-- it when it is at rest and its pace has run out (spent: held in the wait zset until it has).
local function saveVisit(key, running, ring, held, tat, conc, head)
  if running <= 0 and ring == 0 and held == 0 and not head then
    if tat <= now then
      if g then
        g.dels[#g.dels + 1] = key
        g.raws[key] = false
      else
        redis.call('HDEL', f.state, key)
      end
      return
    end
    held = 1
    redis.call('ZADD', f.wait, tat, key)
  end
  local packed = packParts(running, ring, held, tat, conc, head)
  if raws then
    local sets = g.sets
    sets[#sets + 1] = key
    sets[#sets + 1] = packed
    raws[key] = packed
  else
    redis.call('HSET', f.state, key, packed, DICT_FIELD, DICT_VALUE)
  end
end

-- One visit of key `key`, just taken off the ring. Returns true when the budget stopped the claim
-- before the key's turn was used: the key goes back to the ring's head. The key's state is kept in
-- locals (its parts, stateParts), read from the call's HMGET (gathered) or now, and written here.
local function visit(key)
  local raw
  if raws then raw = raws[key] end
  if raw == nil then raw = call('HGET', stateKey, key) end
  local running, _, held, tat, _, head = stateParts(raw)
  local ring, turn, before = 0, quota, 0
  if key == turnKey then
    -- the rest of a turn cut short, once
    before, turnKey = turnTaken, '#none'
    turn = math.max(1, quota - before)
  end
  local conc, rate, paused = conc0, rate0, false
  if defaults then conc, rate, paused = flowLimits(flowConf(f, key), defaults) end
  local atHead = false
  if paused or (conc > 0 and running >= conc) then
    -- out of the ring until it is resumed, or until one of its slots returns
  elseif rate and tat - rate.allowance > now then
    -- held: under its pace (GCRA) a key may start next at its pace's next start less the burst's
    -- allowance
    local at = tat - rate.allowance
    held = 1
    redis.call('ZADD', f.wait, at, key)
    if not result[5] or at < result[5] then result[5] = at end
  else
    local got, took = nil, 0
    for _ = 1, turn do
      got, head = claimFromLane(key, head)
      if got ~= true then break end
      took = took + 1
      claimed = claimed + 1
      running = running + 1
      -- the start counted in the pace (GCRA: its next start one interval on), which may hold the key
      -- now
      local paced = false
      if rate then
        if tat < now then tat = now end
        tat = tat + rate.interval
        paced = tat - rate.allowance > now
      end
      if claimed >= n or (conc > 0 and running >= conc) or paced then break end
    end
    -- back in the ring while it has ids and room (the next visit checks its pace): at the head
    -- when the budget stopped this claim, or the claim ended, before the key's turn was used (its
    -- turn goes on in the next claim), else at the tail
    local claimable = got == 'more' or (got == true and head and held == 0 and not (conc > 0 and running >= conc))
    if stopped or (claimable and claimed >= n and took < turn) then
      atHead = true
      ring = 1
      cutTurn = (before + took) .. ' ' .. key
    elseif claimable then
      if g then g.tails[#g.tails + 1] = key else ringPush(f, key) end
      ring = 1
    end
  end
  saveVisit(key, running, ring, held, tat, conc, head)
  return atHead
end

-- Keys are taken off the ring as many at a time as the jobs left want, `per` jobs a key (their
-- states read in one HMGET): the quota at first, then what the keys visited gave (a key with one
-- ready job gives one); the keys a visit puts back at the tail are pushed before the next take, so
-- the ring turns as it would key by key. Keys taken and not visited (the claim is done) go back to
-- its head.
local per = quota
while claimed < n and visits > 0 and not stopped do
  if g then gatheredTails(g) end
  local keys = redis.call('LPOP', f.ring, string.format('%d', math.min(visits, math.ceil((n - claimed) / per))))
  if not keys then break end
  if g and not turnKey then
    -- the first take: the cut turn's record read with the keys' states
    keys[#keys + 1] = TURN_FIELD
    gatherStates(g, keys)
    keys[#keys] = nil
    local taken, key = string.match(raws[TURN_FIELD] or '', '^(%d+) (.*)$')
    turnKey, turnTaken = key or '#none', tonumber(taken) or 0
  elseif g then
    gatherStates(g, keys)
  end
  local head, i, before = {}, 0, claimed
  while i < #keys and claimed < n and not stopped do
    i = i + 1
    if visit(keys[i]) then head[1] = keys[i] end
  end
  visits = visits - i
  if claimed - before < i * per then per = math.max(1, math.floor((claimed - before) / i)) end
  for j = i + 1, #keys do head[#head + 1] = keys[j] end
  if #head > 0 then
    local reversed = {}
    for j = #head, 1, -1 do reversed[#reversed + 1] = head[j] end
    redis.call('LPUSH', f.ring, unpack(reversed))
  end
end
if g then
  if cutTurn then
    g.sets[#g.sets + 1] = TURN_FIELD
    g.sets[#g.sets + 1] = cutTurn
  elseif raws[TURN_FIELD] then
    g.dels[#g.dels + 1] = TURN_FIELD -- taken up: nothing left of it once the keys are idle
  end
  Flow.gatheredWrite(g)
end
Flow.countReady(f, -taken)
if stopped then result[4] = 1 end
if late and #late > 0 then Lateness.recordLateness(KEYS[6], now, late) end
result[2] = taken
return result
