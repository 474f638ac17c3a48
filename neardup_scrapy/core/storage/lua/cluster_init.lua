-- ARGV: P, format, load, maxval, groups, name, json, ... -> {stored params (flat), {load, maxval, groups}}
local P = ARGV[1]
local M = P .. ':m'
local stored = {}
if redis.call('EXISTS', P .. ':params') == 1 then
  stored = redis.call('HGETALL', P .. ':params')
else
  for i = 6, #ARGV - 1, 2 do redis.call('HSET', P .. ':params', ARGV[i], ARGV[i + 1]) end
end
if redis.call('EXISTS', M) == 0 then
  redis.call('HSET', M, 'format', ARGV[2], 'next', 0, 'seq', 0, 'count', 0, 'load', ARGV[3],
    'maxval', ARGV[4], 'groups', ARGV[5], 'hosts', 0)
end
return {stored, redis.call('HMGET', M, 'load', 'maxval', 'groups'), redis.call('HGET', M, 'format')}
