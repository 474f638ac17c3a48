-- Linear hashing of bucket fields over shards 0, 1, ... (level L, split pointer sp): a field's
-- shard from its first four bytes. shards.lua (hashes) and cluster_shards.lua (strings) split them.
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
-- The shards to split now, at most 4, each as {shard, its sibling, 2 ^ (L + 1)} (the fields of
-- the shard whose address is now the sibling move there), while the mean load of the ``n``
-- buckets is above ``load``; saves the level and split pointer after them in hash M.
local function splits_due(M, L, sp, n, load)
  local due = {}
  while n > load * (2 ^ L + sp) and #due < 4 do
    due[#due + 1] = {sp, sp + 2 ^ L, 2 ^ (L + 1)}
    sp = sp + 1
    if sp == 2 ^ L then L = L + 1; sp = 0 end
  end
  if #due > 0 then redis.call('HSET', M, 'L', L, 'p', sp) end
  return due, L, sp
end
