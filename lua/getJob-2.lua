--[[
  Reads one job's record. A body kept apart is not read here: the caller reads it with a plain HGET
  of the bodies hash in the same MULTI/EXEC (moving a large body through a script costs Redis
  about ten times a plain read: BENCHMARKS.md, step 7).
  KEYS[1] jobs hash  KEYS[2] delayed zset
  ARGV[1] id
  Returns the job's view (see includes/job.lua; its body is false when kept apart), or nil when
  there is no such job. Mirrored by getJob's reply type in lib/engine/scripts.ts.
]]
--- @include "job"
local record = redis.call('HGET', KEYS[1], ARGV[1])
if not record then return false end
local h, inline = Job.decode(record)
return Job.view(KEYS[1], KEYS[2], ARGV[1], h, inline)
