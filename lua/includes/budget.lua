--[[
  Work in bytes: a script that loops over jobs counts the bytes of the records and bodies it reads
  or writes against the byte budget its caller passes (SCRIPT_CALL_BYTES in lib/rules/limits.ts), and
  stops before the job that would pass it (never before its first job), saying so in its reply.
]]
-- A byte budget: `fits(bytes)` is true while `bytes` more keep the call within `budget`, and
-- for the call's first job always (unless `strict`); `spend(bytes)` counts them.
local function byteBudget(budget, strict)
  local used, jobs = 0, 0
  return {
    fits = function(bytes) return (jobs == 0 and not strict) or used + bytes <= budget end,
    spend = function(bytes) used, jobs = used + bytes, jobs + 1 end,
  }
end
