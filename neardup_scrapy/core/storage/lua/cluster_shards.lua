-- A group's bucket shards ``S .. n`` as strings, spread by linear hashing (linear_hash.lua: level
-- L, split pointer sp): a shard holds entries of W bytes, a field (W - 4 bytes) and a u32 id, in
-- the order they were added; a bucket's ids are the ids of its field's entries in that order. A
-- bucket past ``maxval`` bytes of ids keeps them in string ``<base>:o:<field>`` and one entry with
-- id OVERFLOW in its shard. Entries are 4 bytes narrower than a listpack's field and value (no
-- length bytes per element) and a shard is one allocation.
local OVERFLOW = '\255\255\255\255'
-- starts (1-based) of the entries of field f in shard v
local function entries_of(v, f)
  local W = #f + 4
  local out = {}
  local i = string.find(v, f, 1, true)
  while i do
    if (i - 1) % W == 0 then
      out[#out + 1] = i
      i = string.find(v, f, i + W, true)
    else
      i = string.find(v, f, i + 1, true)
    end
  end
  return out
end
local function id_at(v, f, at) return string.sub(v, at + #f, at + #f + 3) end
local function split(S, M, L, sp, n, load, W)
  for _, d in ipairs(splits_due(M, L, sp, n, load)) do
    local old, m2 = S .. d[1], d[3]
    local v = redis.call('GET', old)
    if v then
      local keep, move = {}, {}
      for j = 1, #v - W + 1, W do
        local e = string.sub(v, j, j + W - 1)
        if h32(e) % m2 ~= d[1] then move[#move + 1] = e else keep[#keep + 1] = e end
      end
      if #keep > 0 then redis.call('SET', old, table.concat(keep)) else redis.call('DEL', old) end
      if #move > 0 then
        local new = S .. d[2]
        redis.call('SET', new, (redis.call('GET', new) or '') .. table.concat(move))
      end
    end
  end
end
