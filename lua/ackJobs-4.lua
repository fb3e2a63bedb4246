--[[
  Finishes running attempts of one topic and partition as done: acks sent together by one process
  (lib/engine/attempts.ts gathers the acks made in one turn of its event loop into one call).
  Rewrites each record's header only (never a body kept apart), or deletes record and body.
  KEYS[1] jobs hash  KEYS[2] bodies hash  KEYS[3] running zset  KEYS[4] done zset
  ARGV[1] fixed clock ms or ''
  ARGV[2] retention ms (how long a done job stays readable; 0 deletes it now, or at the next
          sweep when it has a group: the purge takes it out of its group)
  ARGV[3..] triples: id, attempt number the caller ran, the attempt's claim token; at most
          ACK_BATCH (lib/engine/attempts.ts) a call, so a call's work is bounded
  A job whose callback names its end as done leaves an entry in the outbox (includes/callbacks.lua).
  Returns one code per triple, in order: OUTCOME.ACKED (OUTCOME.ACKED_NOTIFY: and an outbox entry
          was written), or REFUSAL.NOT_FOUND,
          REFUSAL.STALE_ATTEMPT (that claim already timed out, finished or belongs to an earlier
          incarnation of the id), REFUSAL.CANCELLED (cancelled while running): nothing changed
          (includes/ack.lua). Mirrored by AckReply in lib/engine/scripts.ts.
]]
--- @include "clock"
--- @include "ack"
-- what the includes give that the call uses, as locals (a table lookup fewer a use)
local ackAttempts, clock = Ack.ackAttempts, Clock.clock
-- (+ 0 parses once; tonumber twice)
return ackAttempts(KEYS[1], KEYS[2], KEYS[3], KEYS[4], clock(ARGV[1]), ARGV[2] + 0, ARGV, 3)
