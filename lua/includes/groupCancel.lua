--[[
  The mark of a group cancel under way (lua/cancelGroup-6.lua): the jobs hash field
  GROUP_CANCEL_FIELD .. group holds the version the cancel started at, and a claim cancels instead
  of starting a job of the group that has not changed since (lua/claimJobs-6.lua).
]]
local GroupCancel = {}
do
  local GROUP_CANCEL_FIELD = '#cancel:'

  -- lastError of a job that a claim cancelled because its group's cancel (started at version
  -- `mark`) had not reached it yet: lua/cancelGroup-6.lua counts it as cancelled by that call.
  local function groupCancelError(mark)
    return 'cancelled with its group (cancel at version ' .. mark .. ') before it could start'
  end

  GroupCancel.GROUP_CANCEL_FIELD, GroupCancel.groupCancelError = GROUP_CANCEL_FIELD, groupCancelError
end
