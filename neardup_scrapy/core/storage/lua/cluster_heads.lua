-- KEYS[1] a hash of records; ARGV: field, slot, ... -> the first 16 bytes (the head) of each
-- record, or ""
local out = {}
for i = 1, #ARGV - 1, 2 do
  local rec = records_of(redis.call('HGET', KEYS[1], ARGV[i]))[tonumber(ARGV[i + 1]) + 1]
  out[#out + 1] = string.sub(rec, 1, 16)
end
return out
