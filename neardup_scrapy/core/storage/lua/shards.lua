-- Linear hashing of bucket fields over the shards ``S .. n`` (level L, split pointer sp); ``split``
-- splits shard sp while the mean load of the ``n`` buckets is above ``load`` and saves L/p in hash M.
local function h32(f)
  local b1, b2, b3, b4 = string.byte(f, 1, 4)
  return ((b1 * 256 + b2) * 256 + b3) * 256 + b4
end
local function address(f, L, sp)
  local h = h32(f)
  local m = 2 ^ L
  local a = h % m
  if a < sp then a = h % (2 * m) end
  return a
end
local function split(S, M, L, sp, n, load)
  local splits = 0
  while n > load * (2 ^ L + sp) and splits < 4 do
    local old = S .. sp
    local m2 = 2 ^ (L + 1)
    local all = redis.call('HGETALL', old)
    if #all > 0 then
      redis.call('DEL', old)
      local keep, move = {}, {}
      for k = 1, #all, 2 do
        local t = keep
        if h32(all[k]) % m2 ~= sp then t = move end
        t[#t + 1] = all[k]
        t[#t + 1] = all[k + 1]
      end
      if #keep > 0 then redis.call('HSET', old, unpack(keep)) end
      if #move > 0 then redis.call('HSET', S .. (sp + 2 ^ L), unpack(move)) end
    end
    sp = sp + 1
    if sp == 2 ^ L then L = L + 1; sp = 0 end
    splits = splits + 1
  end
  if splits > 0 then redis.call('HSET', M, 'L', L, 'p', sp) end
  return L, sp
end
