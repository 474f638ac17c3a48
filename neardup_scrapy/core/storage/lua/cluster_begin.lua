-- ARGV: P, alloc (0/1), first id (when the index must be created again) -> {seq, id or -1, time s, time us}
local P = ARGV[1]
local M = P .. ':m'
if redis.call('EXISTS', M) == 0 then return redis.error_reply('NEARDUP_NOINDEX') end
local id = -1
if ARGV[2] == '1' then id = redis.call('HINCRBY', M, 'next', 1) - 1 end
local t = redis.call('TIME')
return {tonumber(redis.call('HGET', M, 'seq')), id, tonumber(t[1]), tonumber(t[2])}
