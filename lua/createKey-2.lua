--[[
  Creates a named API key (lib/engine/api-keys.ts). The secret is never stored: only its SHA-256,
  which the auth lookup (lua/authKey-4.lua) is keyed by.
  KEYS[1] the keys' records (dq:{keys}:keys: HASH name -> JSON record)
  KEYS[2] the secrets' digests (dq:{keys}:hashes: HASH sha256 hex -> name; and '#admins', how many
  named keys have the admin scope: an admin key adds one while it is kept, lua/revokeKey-4.lua)
  ARGV[1] fixed clock ms or ''  ARGV[2] name  ARGV[3] sha256 hex of the secret  ARGV[4] scope
  ARGV[5] topics the key is limited to, comma-separated ('' for every topic)  ARGV[6] name of the
  key that creates it  ARGV[7] the most keys a deployment may hold
  Returns { KEY_CHANGE.CREATED, createdAt } or { KEY_CHANGE.NAME_TAKEN } or { KEY_CHANGE.TOO_MANY }.
]]
--- @include "codes"
--- @include "clock"
local keys, hashes = KEYS[1], KEYS[2]
local name, sha, scope, topics, by, most = ARGV[2], ARGV[3], ARGV[4], ARGV[5], ARGV[6], tonumber(ARGV[7])
if redis.call('HGET', keys, name) or redis.call('HGET', hashes, sha) then return { Codes.KEY_CHANGE.NAME_TAKEN } end
if redis.call('HLEN', keys) >= most then return { Codes.KEY_CHANGE.TOO_MANY } end
local now = Clock.clock(ARGV[1])
redis.call('HSET', keys, name, cjson.encode({ scope = scope, topics = topics, hash = sha, createdAt = now, createdBy = by }))
redis.call('HSET', hashes, sha, name)
if scope == 'admin' then redis.call('HINCRBY', hashes, '#admins', 1) end
return { Codes.KEY_CHANGE.CREATED, now }
