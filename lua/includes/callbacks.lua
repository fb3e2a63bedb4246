--[[
  Callbacks (lib/engine/callbacks.ts): a job whose header names one (H_CALLBACK) and ends in one of
  the ends it names leaves an entry in its partition's outbox, in the script that ends it, so the
  end and its notification are written together or not at all. The outbox is a zset beside the
  jobs hash (its key + OUTBOX_SUFFIX, so in its slot; outboxKey in lib/engine/keys.ts names it),
  scored by when the entry is next handed out; an entry is
    '<end>\t<mark>\t<attempts>\t<ended at ms>\t<id>\t<callback>\t<last error>'
  (<end> 1 done, 2 dead, 3 cancelled, 4 expired). <mark> tells this end from the id's other ends:
  its creation time (H_CREATED), for an end a job (a re-created id is another job) comes to once,
  even when a failover lost the end and the job ends again; for dead, which a redrive may repeat,
  its version after the end (before it, when the end deleted the record). lua/takeCallbacks-1.lua hands entries out, the engine adds the
  job each names (its id made of the entry: a retry is refused as existing), and
  lua/endCallbacks-1.lua removes them.
]]
--- @include "job"
local Callbacks = {}
do
  local H_CALLBACK, H_VERSION, H_ATTEMPTS, H_ERROR = Job.H_CALLBACK, Job.H_VERSION, Job.H_ATTEMPTS, Job.H_ERROR
  local H_CREATED = Job.H_CREATED

  -- Notes the end `ended` (1 done, 2 dead, 3 cancelled, 4 expired) of job `id` (header `h`, as the
  -- end left it) of jobs hash `jobsKey` at `now`, when its callback names that end. Returns true
  -- when it wrote an entry.
  local function noteEnd(jobsKey, id, h, ended, now)
    local cb = h[H_CALLBACK]
    if not cb or string.byte(cb, ended) == 45 then return false end -- 45: '-', that end is not named
    local mark = h[H_CREATED]
    if ended == 2 then mark = h[H_VERSION] end
    -- (numbers through '%d': a number joined with .. costs a '%.14g' format)
    local entry = string.format('%d\t%d\t%d\t%d\t', ended, mark, h[H_ATTEMPTS], now) .. id .. '\t' .. cb .. '\t'
      .. (h[H_ERROR] or '')
    local outbox = jobsKey .. '#cb'
    redis.call('ZADD', outbox, string.format('%d', now), entry)
    return true
  end

  Callbacks.noteEnd = noteEnd
end
