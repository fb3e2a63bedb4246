--[[
  Looks up the key whose secret has digest ARGV[2] (lib/api/auth.ts caches the answer for a
  few seconds per Lambda instance) and notes its use, at most once per ARGV[4] ms, so that a busy
  key costs a write a minute, not one a request.
  KEYS[1] the keys' records  KEYS[2] the secrets' digests  KEYS[3] last uses  KEYS[4] revoked
  deployment digests
  ARGV[1] fixed clock ms or ''  ARGV[2] sha256 hex of the presented secret  ARGV[3] sha256 hex
  of the deployment's key, '' when it has none  ARGV[4] ms between two notes of a key's use
  Returns { name, scope, topics (comma-separated, '' for every topic) }, or false for no such key.
]]
--- @include "clock"
local keys, hashes, used, revoked = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local sha, deployment, every = ARGV[2], ARGV[3], tonumber(ARGV[4])
local name, scope, topics
if deployment ~= '' and sha == deployment then
  if redis.call('HGET', revoked, sha) then return false end
  name, scope, topics = 'deployment', 'admin', ''
else
  name = redis.call('HGET', hashes, sha)
  if not name then return false end
  local record = redis.call('HGET', keys, name)
  if not record then return false end
  record = cjson.decode(record)
  scope, topics = record.scope, record.topics
end
local now = Clock.clock(ARGV[1])
local last = tonumber(redis.call('HGET', used, name))
if not last or now - last >= every then redis.call('HSET', used, name, now) end
return { name, scope, topics }
