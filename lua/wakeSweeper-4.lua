--[[
  Called after a job became the earliest due of its topic: makes sure a sweeper looks in time.
  KEYS[1] lease string  KEYS[2] planned-next string  KEYS[3] wake list  KEYS[4] wake counter
  ARGV[1] fixed clock ms or ''  ARGV[2] the job's due time, epoch ms, or '' for now
  ARGV[3] horizon ms (the tick covers anything later)
  Returns WAKE.NOTHING (a sweeper looks in time, or the tick will), WAKE.WOKEN (the running
          sweeper was woken), or WAKE.START_SWEEPER (no sweeper runs and the job is due within
          the horizon: invoke one). Mirrored by wakeSweeper in lib/engine/scripts.ts.
]]
--- @include "codes"
--- @include "clock"
local now = Clock.clock(ARGV[1])
local due, horizon = tonumber(ARGV[2]) or now, tonumber(ARGV[3])
if redis.call('EXISTS', KEYS[1]) == 1 then
  local planned = tonumber(redis.call('GET', KEYS[2]) or '')
  if planned and planned <= due then return Codes.WAKE.NOTHING end
  redis.call('INCR', KEYS[4])
  redis.call('RPUSH', KEYS[3], string.format('%d', due))
  redis.call('LTRIM', KEYS[3], '-16', '-1') -- one wake-up is enough; keep the list tiny
  redis.call('PEXPIRE', KEYS[3], '60000')
  return Codes.WAKE.WOKEN
end
if due <= now + horizon then return Codes.WAKE.START_SWEEPER end
return Codes.WAKE.NOTHING
