-- Per-host counters, mirror evidence and the helpers of idempotent, deadline-bound commits, on keys
-- under ``P``. Shared by both Redis stores; each defines before it the hooks it calls:
--   host_of(id)             the host of a committed page
--   hosts_load(root)        the host table (host -> pages) of a cluster of several pages, or nil
--   hosts_save(root, flat)  store {host, pages, ...}; {} deletes
--   hosts_move(from, to)    rename a cluster's table (a new representative)
--   bump(key, field, n)     add n to a counter (P:hc, P:sh:<host>, P:cn:<host>)
-- The single-server store: server_common.lua and server_hosts.lua (hashes under P, counters
-- changed in place). The cluster store: cluster_table.lua (packed tables on the hash tag P,
-- counter changes returned as deltas).
local M = P .. ':m'
local HC = P .. ':hc'
local PROMOTED = 0  -- set by a commit that made its page the representative (Commit.named_key)
local function commit_result(doc)
  local host = ARGV[5]
  local pages = tonumber(redis.call('HGET', HC, 'p|' .. host) or '0')
  return {doc, pages, PROMOTED}
end
-- the mirror evidence (see neardup_scrapy.core.mirrors.MirrorLedger, whose arithmetic this repeats)
local function share(a, b, n)
  bump(P .. ':sh:' .. a, b, n)
  bump(P .. ':sh:' .. b, a, n)
end
local function cluster_hosts(root)
  local t = hosts_load(root)
  if t then return t end
  t = {}
  local h = host_of(root)
  if h then t[h] = 1 end
  return t
end
local function size(t)
  local c = 0
  for _ in pairs(t) do c = c + 1 end
  return c
end
local function save_cluster(root, t)
  local args = {}
  for h, n in pairs(t) do args[#args + 1] = h; args[#args + 1] = n end
  if #args > 2 or (#args == 2 and args[2] > 1) then hosts_save(root, args) else hosts_save(root, {}) end
end
local function join(root, host)
  local t = cluster_hosts(root)
  if not t[host] then
    bump(HC, 'D|' .. host, 1)
    bump(HC, 'U|' .. host, 1)
    if size(t) == 1 then for h in pairs(t) do bump(HC, 'U|' .. h, 1) end end
    for h in pairs(t) do share(host, h, 1) end
  end
  t[host] = (t[host] or 0) + 1
  save_cluster(root, t)
end
local function union(a, b)
  local first, second = cluster_hosts(a), cluster_hosts(b)
  local merged, hosts = {}, {}
  for h, n in pairs(second) do merged[h] = n end
  for h, n in pairs(first) do merged[h] = (merged[h] or 0) + n end
  for h in pairs(merged) do hosts[#hosts + 1] = h end
  table.sort(hosts)
  local s1, s2, total = size(first), size(second), #hosts
  for _, h in ipairs(hosts) do
    if first[h] and second[h] then bump(HC, 'D|' .. h, -1) end
    local before, after = 0, 0
    if first[h] and s1 > 1 then before = before + 1 end
    if second[h] and s2 > 1 then before = before + 1 end
    if total > 1 then after = 1 end
    bump(HC, 'U|' .. h, after - before)
  end
  for i = 1, #hosts do
    for j = i + 1, #hosts do
      local x, y = hosts[i], hosts[j]
      local before = 0
      if first[x] and first[y] then before = before + 1 end
      if second[x] and second[y] then before = before + 1 end
      if before ~= 1 then share(x, y, 1 - before) end
    end
  end
  hosts_save(a, {})
  save_cluster(b, merged)
end
-- the doc id of an already applied commit with this client's sequence number (a retried reply), or nil
local function replayed()
  if ARGV[11] == '' then return nil end
  local prev = redis.call('GET', P .. ':n:' .. ARGV[11])
  if not prev then return nil end
  local seq, doc = string.match(prev, '^(%d+):(-?%d+)')
  if seq == ARGV[12] then return tonumber(doc) end
  return nil
end
-- True when the client has given up waiting for this commit (it reached Redis after its
-- deadline): applying it would index a page the client counted as not checked.
local function late()
  local deadline = tonumber(ARGV[13])
  if not deadline or deadline <= 0 then return false end
  local t = redis.call('TIME')
  return tonumber(t[1]) + tonumber(t[2]) / 1000000 > deadline
end
