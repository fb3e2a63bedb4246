--[[
  Claims up to n ready jobs of one topic and partition for an attempt each: counts the attempt
  and puts the job in the running zset with its TTR deadline. Each claim gets a token no other
  claim has (ARGV[5] and its place in this call): ack, fail, start and release present it. Ids whose job is gone, cancelled,
  rescheduled or already claimed are popped and skipped, never searched for.
  KEYS[1] ready list  KEYS[2] running zset  KEYS[3] jobs hash  KEYS[4] delayed zset
  ARGV[1] fixed clock ms or ''  ARGV[2] n, at most this many ids are popped
  ARGV[3] max running: claims stop when the running zset holds this many
  ARGV[4] the topic's ttr ms, for jobs that set none
  ARGV[5] a random nonce, new for every call (the claim tokens are nonce.i)
  Returns { now, popped, skipped, { id, attempt, runAt, deadline, url, body, maxAttempts, claim }... }
  Mirrored by ClaimReply and ClaimedItem in lib/engine/scripts.ts.
]]
local readyKey, runningKey, jobsKey, delayedKey = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local now = clock(ARGV[1])
local n = math.min(tonumber(ARGV[2]), tonumber(ARGV[3]) - redis.call('ZCARD', runningKey))
if n <= 0 then return { now, 0, 0 } end
local ids = redis.call('LPOP', readyKey, n)
if not ids then return { now, 0, 0 } end

local result = { now, #ids, 0 }
for i, id in ipairs(ids) do
  local record = redis.call('HGET', jobsKey, id)
  local h, body
  if record then h, body = decode(record) end
  if not h or h[H_STATE] ~= PENDING or redis.call('ZSCORE', delayedKey, id) then
    result[3] = result[3] + 1
  else
    local deadline = now + (h[H_TTR] or tonumber(ARGV[4]))
    h[H_ATTEMPTS] = h[H_ATTEMPTS] + 1
    h[H_STATE], h[H_UPDATED], h[H_DEADLINE] = RUNNING, now, deadline
    h[H_CLAIM], h[H_STARTED] = ARGV[5] .. '.' .. i, false
    redis.call('HSET', jobsKey, id, encode(h, body))
    redis.call('ZADD', runningKey, deadline, id)
    result[#result + 1] = { id, h[H_ATTEMPTS], h[H_RUN_AT], deadline, h[H_URL], body, h[H_MAX], h[H_CLAIM] }
  end
end
return result
