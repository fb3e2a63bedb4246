--[[
  A flow key's live state (includes/flow.lua). Changes nothing.
  KEYS[1] jobs hash of the flow topic
  ARGV[1] fixed clock ms or ''  ARGV[2] the key
  Returns flowView's reply (includes/flow.lua).
]]
--- @include "clock"
--- @include "flow"
return Flow.flowView(Flow.flowKeys(KEYS[1]), ARGV[2], Clock.clock(ARGV[1]))
