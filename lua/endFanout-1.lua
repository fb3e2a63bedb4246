--[[
  Clears the running fan-out's mark (only its own); it then looks at the ready lists once more.
  KEYS[1] fan-out flag string
  ARGV[1] token of the fan-out that stops
  Returns 1 cleared, 0 the mark was another's or had expired (nothing changed)
]]
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('DEL', KEYS[1])
  return 1
end
return 0
