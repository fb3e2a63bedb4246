--[[
  Work in bytes: a script that loops over jobs counts the bytes of the records and bodies it reads
  or writes against the byte budget its caller passes (SCRIPT_CALL_BYTES in lib/core/limits.ts), and
  stops before the job that would pass it (never before its first job), saying so in its reply.
  The scripts on the hot path (claimJobs-7's plain path, claimFlow-6, startAttempts-5, addJobs-5)
  count by this rule inline, a table and a closure fewer a call: a change of the rule goes there too.
]]
local Budget = {}
do
  -- A byte budget: `take(bytes)` counts `bytes` more against `budget` and is true when they keep
  -- the call within it, or are the call's first job's (unless `strict`); else it counts nothing and
  -- is false: the caller stops before this job and says so.
  local function byteBudget(budget, strict)
    local used, jobs = 0, 0
    return {
      take = function(bytes)
        if not ((jobs == 0 and not strict) or used + bytes <= budget) then return false end
        used, jobs = used + bytes, jobs + 1
        return true
      end,
    }
  end

  Budget.byteBudget = byteBudget
end
