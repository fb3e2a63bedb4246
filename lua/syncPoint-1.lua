--[[
  Bumps the partition's sync counter, so that a replica wait (WAIT) on this connection covers
  every change the partition's primary had made before it, whoever wrote them: WAIT waits only
  for the calling connection's own writes, and an answer such as "this job already exists" wrote
  nothing. Used only with durability `replica` (lib/engine/durable.ts).
  KEYS[1] sync counter (dq:{p<n>}:sync)
  Returns the counter's new value.
]]
return redis.call('INCR', KEYS[1])
