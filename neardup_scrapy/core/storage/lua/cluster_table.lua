-- The page table and host codes, on {P} (P is the hash-tagged base).
local P = ARGV[1]
local M = P .. ':m'
-- the page table, in chunks of 2^20 pages (8 MB; a Redis string holds at most 512 MB)
local function entry(id)
  return P .. ':t:' .. math.floor(id / 1048576), 8 * (id % 1048576)
end
local function parent_of(id)
  if id < 0 then return nil end
  local key, at = entry(id)
  local s = redis.call('GETRANGE', key, at, at + 3)
  if #s < 4 then return nil end
  local v = struct.unpack('<I4', s)
  if v == 0 then return nil end
  return v - 1
end
-- cluster root of a committed page, -1 for a page not committed
local function find(id)
  local p = parent_of(id)
  if p == nil then return -1 end
  local hops = 0
  while p ~= id and hops < 100000 do
    local q = parent_of(p)
    if q == nil then return p end
    id, p = p, q
    hops = hops + 1
  end
  return id
end
local function root_of(id) return find(id) end
local function host_of(id)
  local key, at = entry(id)
  local s = redis.call('GETRANGE', key, at + 4, at + 7)
  if #s < 4 then return nil end
  local code = struct.unpack('<I4', s)
  if code == 0 then return nil end
  local h = redis.call('HGET', P .. ':hv', code - 1)
  if h == false then return nil end
  return h
end
-- the code of a host (0, 1, ...), given one when it has none
local function code_of(host)
  local code = tonumber(redis.call('HGET', P .. ':hk', host) or '-1')
  if code < 0 then
    code = redis.call('HINCRBY', M, 'hosts', 1) - 1
    redis.call('HSET', P .. ':hk', host, code)
    redis.call('HSET', P .. ':hv', code, host)
  end
  return code
end
-- The host table of each cluster of several pages (host -> pages, see mirror.lua), packed: field
-- <root> of hash P:ch:<root // CH_SPAN>, value u32 host code and u32 pages per host. A hash of its
-- own per cluster cost ~100 bytes of key overhead each, on this one slot; a field of a listpack ~20.
local function ch_key(root) return P .. ':ch:' .. math.floor(root / CH_SPAN) end
local function hosts_load(root)
  local v = redis.call('HGET', ch_key(root), root)
  if not v then return nil end
  local t = {}
  for j = 1, #v - 7, 8 do
    local code, n = struct.unpack('<I4I4', v, j)
    local h = redis.call('HGET', P .. ':hv', code)
    if h then t[h] = n end
  end
  return t
end
local function hosts_save(root, flat)
  if #flat == 0 then
    redis.call('HDEL', ch_key(root), root)
    return
  end
  local parts = {}
  for k = 1, #flat, 2 do parts[#parts + 1] = struct.pack('<I4I4', code_of(flat[k]), flat[k + 1]) end
  redis.call('HSET', ch_key(root), root, table.concat(parts))
end
local function hosts_move(from, to)
  local v = redis.call('HGET', ch_key(from), from)
  if v then
    redis.call('HDEL', ch_key(from), from)
    redis.call('HSET', ch_key(to), to, v)
  end
end
-- The counters of the single-server store (P:hc, P:sh:<a>, P:cn:<a>) are not kept here: each
-- change becomes a delta (kind h/s/c, host a, field b, n) that the script returns and the client
-- applies on host a's group slot (cluster_counts.lua). Packed: kind, u16 #a, a, u16 #b, b, f64 n.
local DELTAS = {}
local function delta(kind, a, b, n)
  DELTAS[#DELTAS + 1] = kind .. struct.pack('<I2', #a) .. a .. struct.pack('<I2', #b) .. b
    .. struct.pack('<d', n)
end
local function bump(key, field, n)
  if n == 0 then return end
  local rest = string.sub(key, #P + 2)
  if rest == 'hc' then
    delta('h', string.sub(field, 3), string.sub(field, 1, 1), n)
  else
    delta(string.sub(rest, 1, 1), string.sub(rest, 4), field, n)
  end
end
