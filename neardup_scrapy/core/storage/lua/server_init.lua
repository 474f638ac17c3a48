-- ARGV: prefix, format, load, maxval, first id, name, json, name, json, ...
-- -> {} (created) or the stored params
local P = ARGV[1]
if redis.call('EXISTS', P .. ':params') == 1 then
  return redis.call('HGETALL', P .. ':params')
end
for i = 6, #ARGV - 1, 2 do redis.call('HSET', P .. ':params', ARGV[i], ARGV[i + 1]) end
redis.call('HSET', P .. ':m', 'format', ARGV[2], 'L', 4, 'p', 0, 'n', 0, 'next', ARGV[5], 'load', ARGV[3],
  'maxval', ARGV[4], 'c', 0)
return {}
