--[[
  A handler is about to run a batch: marks each attempt that is still live as started (from now on
  a timeout counts it) and says which are live. An attempt is live while its job is running that
  claim, before its deadline, and not started already (a duplicate event of the same attempt).
  KEYS[1] jobs hash
  ARGV[1] fixed clock ms or ''  ARGV[2..] triples: id, attempt number, claim token ('' for a
          claim of older code)
  Returns one code per triple, in order: OUTCOME.STARTED (run it), or REFUSAL.NOT_FOUND,
          REFUSAL.CANCELLED, REFUSAL.STALE_ATTEMPT (ended, re-created, past its deadline, or
          started already): do not run it.
  Mirrored by StartReply in lib/engine/scripts.ts.
]]
local jobsKey = KEYS[1]
local now = clock(ARGV[1])
local result = {}
for i = 2, #ARGV, 3 do
  local id = ARGV[i]
  local record = redis.call('HGET', jobsKey, id)
  local code = REFUSAL.NOT_FOUND
  if record then
    local h, body = decode(record)
    if h[H_STATE] == CANCELLED then
      code = REFUSAL.CANCELLED
    elseif not isAttempt(h, ARGV[i + 1], ARGV[i + 2]) or h[H_STARTED] or (h[H_DEADLINE] and h[H_DEADLINE] <= now) then
      code = REFUSAL.STALE_ATTEMPT
    else
      h[H_STARTED], h[H_GIVE_BACKS] = now, 0
      redis.call('HSET', jobsKey, id, encode(h, body))
      code = OUTCOME.STARTED
    end
  end
  result[#result + 1] = code
end
return result
