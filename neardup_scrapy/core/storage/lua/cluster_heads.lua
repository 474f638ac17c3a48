-- KEYS[1] a hash of records; ARGV: fields -> the first 16 bytes (the head) of each record, or ""
local out = {}
for i = 1, #ARGV do
  local rec = redis.call('HGET', KEYS[1], ARGV[i])
  out[i] = rec and string.sub(rec, 1, 16) or ''
end
return out
