-- KEYS[1] a hash of records; ARGV: field, 4 bytes, ... -> bytes 4..7 of each record's head
-- (status, Hamming distance, similarity) replaced
for i = 1, #ARGV - 1, 2 do
  local rec = redis.call('HGET', KEYS[1], ARGV[i])
  if rec and #rec >= 8 then
    redis.call('HSET', KEYS[1], ARGV[i], string.sub(rec, 1, 4) .. ARGV[i + 1] .. string.sub(rec, 9))
  end
end
return 1
