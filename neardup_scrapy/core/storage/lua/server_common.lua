local P = ARGV[1]
-- What a lookup answers of a bucket: its first BUCKET_CAP ids, then its last id (the token).
-- The whole value grew with the bucket (a family of thousands of near-identical pages), and so
-- did every answer that carried it.
local function trimmed(v)
  if #v < 4 then return '' end
  return string.sub(v, 1, 4 * BUCKET_CAP) .. string.sub(v, -4)
end
local function bucket(f, L, sp)
  local v = redis.call('HGET', P .. ':s:' .. address(f, L, sp), f)
  if v == false then return '' end
  if v == '' then return redis.call('GET', P .. ':o:' .. f) or '' end
  return v
end
local function parent_of(id)
  local s = redis.call('GETRANGE', P .. ':d:' .. id, 0, 3)
  if #s < 4 then return nil end
  return struct.unpack('<i4', s)
end
-- The cluster root of page id (whose parent is given). Ends on any data: a missing record ends
-- the path, and a cycle of parents (a damaged index) is broken at its smallest id.
local function find(id, parent)
  local hops, visited = 0, nil
  while parent ~= id do
    hops = hops + 1
    if hops > 64 then
      visited = visited or {}
      if visited[id] then
        local low, v = id, parent
        while v ~= id do
          if v < low then low = v end
          v = parent_of(v)
        end
        return low
      end
      visited[id] = true
    end
    local next_parent = parent_of(parent)
    if next_parent == nil then return id end
    id = parent
    parent = next_parent
  end
  return id
end
local function root_of(id)
  local s = redis.call('GETRANGE', P .. ':d:' .. id, 0, 3)
  if #s < 4 then return -1 end
  return find(id, struct.unpack('<i4', s))
end
local function host_of(id)
  local key = P .. ':d:' .. id
  local s = redis.call('GETRANGE', key, 40, 41)
  if #s < 2 then return nil end
  local n = struct.unpack('<I2', s)
  if n == 0 then return '' end
  return redis.call('GETRANGE', key, 42, 41 + n)
end
local function meta()
  local m = redis.call('HMGET', P .. ':m', 'L', 'p')
  if not m[1] then return nil end
  return tonumber(m[1]), tonumber(m[2])
end
-- Records and cluster roots of candidates ids[1..n] (roots not yet seen are appended to ids);
-- nothing when there are more than cap candidates. Third value: whether a candidate is stored.
local function records(ids, seen, cap)
  local ncand = #ids
  local recs, roots, live = {}, {}, false
  if ncand > cap then return recs, roots, live end
  local k = 1
  while k <= #ids do
    local id = ids[k]
    local r = redis.call('GET', P .. ':d:' .. id)
    if r then
      if k <= ncand then live = true end
      recs[k] = r
      local root = find(id, struct.unpack('<i4', r))
      roots[k] = root
      if not seen[root] then seen[root] = true; ids[#ids + 1] = root end
    else
      recs[k] = ''
      roots[k] = -1
    end
    k = k + 1
  end
  return recs, roots, live
end
