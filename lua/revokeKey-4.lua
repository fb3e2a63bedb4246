--[[
  Revokes an API key (lib/engine/api-keys.ts): a named key is deleted with its digest and its
  last use; the deployment's key (API_TOKEN, named 'deployment') has no record, so its digest
  joins the revoked hash, which the auth lookup checks (a redeploy with another secret brings a
  working deployment key back).
  KEYS[1] the keys' records  KEYS[2] the secrets' digests  KEYS[3] last uses (HASH name -> ms)
  KEYS[4] revoked deployment digests (HASH sha256 hex -> 1)
  ARGV[1] name  ARGV[2] sha256 hex of the deployment's key, '' when it has none
  Returns KEY_CHANGE.REVOKED, or KEY_CHANGE.NOT_FOUND (no such key, or revoked already).
]]
--- @include "codes"
local keys, hashes, used, revoked = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local name, deployment = ARGV[1], ARGV[2]
if name == 'deployment' then
  if deployment == '' or redis.call('HGET', revoked, deployment) then return Codes.KEY_CHANGE.NOT_FOUND end
  redis.call('HSET', revoked, deployment, 1)
  redis.call('HDEL', used, name)
  return Codes.KEY_CHANGE.REVOKED
end
local record = redis.call('HGET', keys, name)
if not record then return Codes.KEY_CHANGE.NOT_FOUND end
redis.call('HDEL', hashes, cjson.decode(record).hash)
redis.call('HDEL', keys, name)
redis.call('HDEL', used, name)
return Codes.KEY_CHANGE.REVOKED
