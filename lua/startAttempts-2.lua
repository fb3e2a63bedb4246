--[[
  A handler is about to run a batch: marks each attempt that is still live as started (from now on
  a timeout counts it) and says which are live. An attempt is live while its job is running that
  claim, before its deadline, and not started already (a duplicate event of the same attempt).
  Rewrites each record's header only, and stops before the job whose record would pass the byte
  budget (never before the first). Records how late each started attempt is (now - its runAt) in
  the partition's lateness stats (includes/lateness.lua).
  KEYS[1] jobs hash  KEYS[2] the topic's lateness stats hash of the same partition
  ARGV[1] fixed clock ms or ''  ARGV[2] byte budget of the records read
  ARGV[3..] triples: id, attempt number, claim token
  Returns one code per triple looked at, in order (fewer codes than triples: the budget was
          reached, and the caller sends the rest in another call): OUTCOME.STARTED (run it), or
          REFUSAL.NOT_FOUND, REFUSAL.CANCELLED, REFUSAL.STALE_ATTEMPT (ended, re-created, past its
          deadline, or started already): do not run it.
  Mirrored by StartReply in lib/engine/scripts.ts.
]]
--- @include "codes"
--- @include "clock"
--- @include "budget"
--- @include "job"
--- @include "attempts"
--- @include "lateness"
local jobsKey = KEYS[1]
local now = clock(ARGV[1])
local budget = byteBudget(tonumber(ARGV[2]))
local result = {}
local late = {}
for i = 3, #ARGV, 3 do
  local id = ARGV[i]
  local record = redis.call('HGET', jobsKey, id)
  local code = REFUSAL.NOT_FOUND
  if record then
    if not budget.take(#record) then break end
    local h, inline = decode(record)
    if h[H_STATE] == CANCELLED then
      code = REFUSAL.CANCELLED
    elseif not isAttempt(h, ARGV[i + 1], ARGV[i + 2]) or h[H_STARTED] or (h[H_DEADLINE] and h[H_DEADLINE] <= now) then
      code = REFUSAL.STALE_ATTEMPT
    else
      h[H_STARTED], h[H_GIVE_BACKS] = now, 0
      save(jobsKey, id, h, inline)
      late[#late + 1] = now - h[H_RUN_AT]
      code = OUTCOME.STARTED
    end
  end
  result[#result + 1] = code
end
if #late > 0 then recordLateness(KEYS[2], now, late) end
return result
