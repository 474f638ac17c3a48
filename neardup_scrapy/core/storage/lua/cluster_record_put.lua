-- KEYS[1] a hash of records; ARGV: ttl (seconds, 0: leave the expiry), then field, slot, record
-- triples -> each record set in its slot (an empty record deletes it); then the hash expires
-- ``ttl`` seconds on
for i = 2, #ARGV - 2, 3 do
  local recs = records_of(redis.call('HGET', KEYS[1], ARGV[i]))
  recs[tonumber(ARGV[i + 1]) + 1] = ARGV[i + 2]
  records_save(KEYS[1], ARGV[i], recs)
end
local ttl = tonumber(ARGV[1])
if ttl > 0 then
  redis.call('EXPIRE', KEYS[1], ttl)
end
return 1
