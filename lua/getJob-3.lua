--[[
  Reads one job: its record and its one body.
  KEYS[1] jobs hash  KEYS[2] bodies hash  KEYS[3] delayed zset
  ARGV[1] id
  Returns the job's view (see includes/job.lua), or nil when there is no such job.
  Mirrored by getJob's reply type in lib/engine/scripts.ts.
]]
local record = redis.call('HGET', KEYS[1], ARGV[1])
if not record then return false end
local h, inline = decode(record)
return view(KEYS[3], ARGV[1], h, loadBody(KEYS[2], ARGV[1], inline))
