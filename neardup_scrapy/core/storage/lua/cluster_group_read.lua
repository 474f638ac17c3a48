-- KEYS[1] group meta; ARGV: 1 group base, 2.. fields -> per field its first BUCKET_CAP ids
local B = ARGV[1]
local m = redis.call('HMGET', KEYS[1], 'L', 'p')
local L, sp = tonumber(m[1] or '0'), tonumber(m[2] or '0')
local out = {}
for i = 2, #ARGV do
  local f = ARGV[i]
  local v = redis.call('HGET', B .. ':s:' .. address(f, L, sp), f)
  if v == false then v = '' elseif v == '' then v = redis.call('GETRANGE', B .. ':o:' .. f, 0, 4 * BUCKET_CAP - 1) end
  out[#out + 1] = string.sub(v, 1, 4 * BUCKET_CAP)
end
return out
