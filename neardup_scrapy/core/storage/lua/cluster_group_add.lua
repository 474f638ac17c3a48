-- KEYS[1] group meta; ARGV: 1 group base, 2 load, 3 maxval, 4 packed u32 id, 5.. fields -> bucket count.
-- Idempotent under retry: an id already last in a bucket is not appended again.
local B, M = ARGV[1], KEYS[1]
local m = redis.call('HMGET', M, 'L', 'p')
local L, sp = tonumber(m[1] or '0'), tonumber(m[2] or '0')
local load, maxval, packed = tonumber(ARGV[2]), tonumber(ARGV[3]), ARGV[4]
local new_fields = 0
for i = 5, #ARGV do
  local f = ARGV[i]
  local sk = B .. ':s:' .. address(f, L, sp)
  local v = redis.call('HGET', sk, f)
  if v == false then
    redis.call('HSET', sk, f, packed)
    new_fields = new_fields + 1
  elseif v == '' then
    local okey = B .. ':o:' .. f
    if redis.call('GETRANGE', okey, -4, -1) ~= packed then redis.call('APPEND', okey, packed) end
  elseif string.sub(v, -4) ~= packed then
    if #v + 4 > maxval then
      redis.call('SET', B .. ':o:' .. f, v .. packed)
      redis.call('HSET', sk, f, '')
    else
      redis.call('HSET', sk, f, v .. packed)
    end
  end
end
local n = redis.call('HINCRBY', M, 'n', new_fields)
split(B .. ':s:', M, L, sp, n, load)
return n
