-- KEYS[1] a hash of records; ARGV: field, slot, 4 bytes, ... -> bytes 4..7 of each record's head
-- (status, Hamming distance, similarity) replaced
for i = 1, #ARGV - 2, 3 do
  local recs = records_of(redis.call('HGET', KEYS[1], ARGV[i]))
  local slot = tonumber(ARGV[i + 1]) + 1
  local rec = recs[slot]
  if #rec >= 8 then
    recs[slot] = string.sub(rec, 1, 4) .. ARGV[i + 2] .. string.sub(rec, 9)
    records_save(KEYS[1], ARGV[i], recs)
  end
end
return 1
