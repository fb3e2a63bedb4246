--[[
  Revokes an API key (lib/engine/api-keys.ts): a named key is deleted with its digest and its
  last use; the deployment's key (API_TOKEN, named 'deployment') has no record, so its digest
  joins the revoked hash, which the auth lookup checks (a redeploy with another secret brings a
  working deployment key back). The last key with the admin scope is kept, so that some key can
  always manage keys: the deployment's while no named key is admin, a named admin key while it is
  the only one and the deployment's key is revoked or there is none.
  KEYS[1] the keys' records  KEYS[2] the secrets' digests, and '#admins': how many named keys are
  admin (kept here and by lua/createKey-2.lua; none while missing)  KEYS[3] last uses (HASH name -> ms)
  KEYS[4] revoked deployment digests (HASH sha256 hex -> 1)
  ARGV[1] name  ARGV[2] sha256 hex of the deployment's key, '' when it has none
  Returns KEY_CHANGE.REVOKED, KEY_CHANGE.NOT_FOUND (no such key, or revoked already), or
  KEY_CHANGE.LAST_ADMIN (the last admin key: nothing changed).
]]
--- @include "codes"
local keys, hashes, used, revoked = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local name, deployment = ARGV[1], ARGV[2]
-- How many named keys are admin (lua/createKey-2.lua adds one for each).
local function admins()
  return tonumber(redis.call('HGET', hashes, '#admins')) or 0
end
if name == 'deployment' then
  if deployment == '' or redis.call('HGET', revoked, deployment) then return Codes.KEY_CHANGE.NOT_FOUND end
  if admins() == 0 then return Codes.KEY_CHANGE.LAST_ADMIN end
  redis.call('HSET', revoked, deployment, 1)
  redis.call('HDEL', used, name)
  return Codes.KEY_CHANGE.REVOKED
end
local record = redis.call('HGET', keys, name)
if not record then return Codes.KEY_CHANGE.NOT_FOUND end
record = cjson.decode(record)
if record.scope == 'admin' then
  local n = admins()
  local deploymentWorks = deployment ~= '' and not redis.call('HGET', revoked, deployment)
  if n <= 1 and not deploymentWorks then return Codes.KEY_CHANGE.LAST_ADMIN end
  redis.call('HSET', hashes, '#admins', math.max(n - 1, 0))
end
redis.call('HDEL', hashes, record.hash)
redis.call('HDEL', keys, name)
redis.call('HDEL', used, name)
return Codes.KEY_CHANGE.REVOKED
