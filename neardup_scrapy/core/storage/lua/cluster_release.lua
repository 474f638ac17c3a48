-- ARGV: P, id -> 1 when the id was the last one handed out and is given back
local M = ARGV[1] .. ':m'
if tonumber(redis.call('HGET', M, 'next') or '-1') == tonumber(ARGV[2]) + 1 then
  redis.call('HSET', M, 'next', ARGV[2])
  return 1
end
return 0
