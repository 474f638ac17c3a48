-- KEYS[1] group meta; ARGV: 1 group base, 2 load, 3 maxval, 4 packed u32 id, 5.. fields (one
-- width) -> bucket count. Idempotent under retry: an id already last in a bucket is not added again.
-- Each shard changed is written once, whole (SET: an APPEND would reserve room to grow).
local B, M = ARGV[1], KEYS[1]
local m = redis.call('HMGET', M, 'L', 'p')
local L, sp = tonumber(m[1] or '0'), tonumber(m[2] or '0')
local load, maxval, packed = tonumber(ARGV[2]), tonumber(ARGV[3]), ARGV[4]
local new_fields = 0
local shards, order = {}, {}
for i = 5, #ARGV do
  local f = ARGV[i]
  local sk = B .. ':s:' .. address(f, L, sp)
  if shards[sk] == nil then
    shards[sk] = redis.call('GET', sk) or ''
    order[#order + 1] = sk
  end
  local v = shards[sk]
  local at = entries_of(v, f)
  if #at == 0 then
    v = v .. f .. packed
    new_fields = new_fields + 1
  else
    local last = id_at(v, f, at[#at])
    if last == OVERFLOW then
      local okey = B .. ':o:' .. f
      if redis.call('GETRANGE', okey, -4, -1) ~= packed then redis.call('APPEND', okey, packed) end
    elseif last ~= packed then
      if 4 * #at + 4 > maxval then
        local ids, W = {}, #f + 4
        for k = #at, 1, -1 do
          ids[k] = id_at(v, f, at[k])
          v = string.sub(v, 1, at[k] - 1) .. string.sub(v, at[k] + W)
        end
        redis.call('SET', B .. ':o:' .. f, table.concat(ids) .. packed)
        v = v .. f .. OVERFLOW
      else
        v = v .. f .. packed
      end
    end
  end
  shards[sk] = v
end
for _, sk in ipairs(order) do redis.call('SET', sk, shards[sk]) end
local n = redis.call('HINCRBY', M, 'n', new_fields)
split(B .. ':s:', M, L, sp, n, load, #ARGV[5] + 4)
return n
