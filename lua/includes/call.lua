--[[
  State kept for one call. A script sent with EVAL runs its includes anew on every call, but in the
  library (lib/engine/script-runner.ts: every include once, every script a function of it) the includes run
  once, at FUNCTION LOAD, and every call of every function shares their locals. An include that
  keeps something for the length of one call (a clock reading, a counter read once) says here how
  to clear it; each function of the library calls beginCall first.
]]
local Call = {}
do
  local callResets = {}

  -- Registers `reset`, which clears one include's state for a new call.
  local function onEachCall(reset)
    callResets[#callResets + 1] = reset
  end

  -- Clears every include's state kept for one call: the first thing each library function does.
  local function beginCall()
    for i = 1, #callResets do callResets[i]() end
  end

  Call.onEachCall, Call.beginCall = onEachCall, beginCall
end
