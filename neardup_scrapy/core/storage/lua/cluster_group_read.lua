-- KEYS[1] group meta; ARGV: 1 group base, 2.. fields -> per field its first BUCKET_CAP ids
local B = ARGV[1]
local m = redis.call('HMGET', KEYS[1], 'L', 'p')
local L, sp = tonumber(m[1] or '0'), tonumber(m[2] or '0')
local out = {}
for i = 2, #ARGV do
  local f = ARGV[i]
  local v = redis.call('GET', B .. ':s:' .. address(f, L, sp)) or ''
  local ids = {}
  for _, at in ipairs(entries_of(v, f)) do
    local id = id_at(v, f, at)
    if id == OVERFLOW then
      ids = {redis.call('GETRANGE', B .. ':o:' .. f, 0, 4 * BUCKET_CAP - 1)}
      break
    end
    ids[#ids + 1] = id
    if #ids == BUCKET_CAP then break end
  end
  out[#out + 1] = table.concat(ids)
end
return out
