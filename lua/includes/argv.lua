--[[
  Optional ARGV values: '' (or nothing) stands for none, which a record stores as false.
]]
local Argv = {}
do
  local function optional(value)
    if value == nil or value == '' then return false end
    return value
  end

  local function optionalNumber(value)
    if value == nil or value == '' then return false end
    return tonumber(value)
  end

  Argv.optional, Argv.optionalNumber = optional, optionalNumber
end
