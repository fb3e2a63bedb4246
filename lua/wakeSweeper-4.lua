--[[
  Called after a job became the earliest due of its topic: makes sure a sweeper looks in time.
  KEYS[1] lease string  KEYS[2] planned-next string  KEYS[3] wake list  KEYS[4] wake counter
  ARGV[1] the job's due time, epoch ms, or '' for now  ARGV[2] horizon ms (the tick covers
          anything later)  ARGV[3] fixed clock ms or ''
  Returns 0 nothing to do (a sweeper looks in time, or the tick will), 1 the running sweeper was
          woken, 2 no sweeper runs and the job is due within the horizon: invoke one
]]
local due = tonumber(ARGV[1]) or clock(ARGV[3])
if redis.call('EXISTS', KEYS[1]) == 1 then
  local planned = tonumber(redis.call('GET', KEYS[2]) or '')
  if planned and planned <= due then return 0 end
  redis.call('INCR', KEYS[4])
  redis.call('RPUSH', KEYS[3], due)
  redis.call('LTRIM', KEYS[3], -16, -1) -- one wake-up is enough; keep the list tiny
  redis.call('PEXPIRE', KEYS[3], 60000)
  return 1
end
if due <= clock(ARGV[3]) + tonumber(ARGV[2]) then return 2 end
return 0
