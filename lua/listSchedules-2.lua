--[[
  Lists schedules of one topic and partition by id, after a given id; changes nothing.
  KEYS[1] schedule ids zset  KEYS[2] schedules hash
  ARGV[1] id to list after, or '' from the first  ARGV[2] most schedules to reply
  ARGV[3] byte budget of the records replied (the first is always replied)
  Returns { more 0|1, views... }: a view (includes/schedules.lua scheduleView, with the body)
  per schedule; `more` 1 when the budget stopped it before `limit`. Mirrored by
  ListSchedulesReply in lib/engine/scripts.ts.
]]
--- @include "budget"
--- @include "schedules"
local from = '-'
if ARGV[1] ~= '' then from = '(' .. ARGV[1] end
local budget = Budget.byteBudget(tonumber(ARGV[3]))
local ids = redis.call('ZRANGEBYLEX', KEYS[1], from, '+', 'LIMIT', 0, tonumber(ARGV[2]))
local views = {}
for _, id in ipairs(ids) do
  local record = redis.call('HGET', KEYS[2], id)
  if record then
    if not budget.take(#record) then return { 1, unpack(views) } end
    views[#views + 1] = Schedules.scheduleView(id, cmsgpack.unpack(record), true)
  end
end
return { 0, unpack(views) }
