--[[
  Bumps a partition's sync counter, so that a replica wait (WAIT) on this connection covers
  every change the partition's primary had made before it, whoever wrote them and in whichever
  partition (its replicas follow one stream of its writes; one bump a primary is enough): WAIT
  waits only for the calling connection's own writes, and an answer such as "this job already
  exists" or 404 wrote nothing. Used only with durability `replica` (lib/engine/durable.ts).
  KEYS[1] sync counter (dq:{<partition's tag>}:sync)
  Returns the counter's new value.
]]
return redis.call('INCR', KEYS[1])
