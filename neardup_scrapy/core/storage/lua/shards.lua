-- Bucket fields in hash shards ``S .. n``, spread by linear hashing (linear_hash.lua: level L,
-- split pointer sp); ``split`` splits shard sp while the mean load of the ``n`` buckets is above
-- ``load`` and saves L/p in hash M.
local function split(S, M, L, sp, n, load)
  local due
  due, L, sp = splits_due(M, L, sp, n, load)
  for _, d in ipairs(due) do
    local old, m2 = S .. d[1], d[3]
    local all = redis.call('HGETALL', old)
    if #all > 0 then
      redis.call('DEL', old)
      local keep, move = {}, {}
      for k = 1, #all, 2 do
        local t = keep
        if h32(all[k]) % m2 ~= d[1] then t = move end
        t[#t + 1] = all[k]
        t[#t + 1] = all[k + 1]
      end
      if #keep > 0 then redis.call('HSET', old, unpack(keep)) end
      if #move > 0 then redis.call('HSET', S .. d[2], unpack(move)) end
    end
  end
  return L, sp
end
