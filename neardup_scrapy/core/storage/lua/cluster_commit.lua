-- ARGV: 1 P, 2 snapshot, 3 written fields (6 bytes each), 4 '<i4i4' doc and given parent, 5 host,
-- 6 status char, 7 canonical host, 8 nbytes, 9 unions, 10 looked-up fields, 11 client, 12 client seq,
-- 13 deadline, 14 seen ids (u32 each), 15 log size, 16 hand out a next id (0/1), 17 the ids (u32
-- each) under the field of Commit.named_key, read while the page was written
-- -> {doc, host pages, seq, next id, old root}; doc -2 on conflict; error NEARDUP_LATE past the
-- deadline; old root >= 0 when a page of the cluster named the page's address canonical and it
-- became the representative (its record and the old root's are swapped by cluster_set_tail.lua after)
if redis.replicate_commands then redis.replicate_commands() end
if redis.call('EXISTS', M) == 0 then return redis.error_reply('NEARDUP_NOINDEX') end
local LOG = P .. ':log'
local function next_id()
  if ARGV[16] == '1' then return redis.call('HINCRBY', M, 'next', 1) - 1 end
  return -1
end
local OLD_ROOT = -1
local function reply(doc)
  return {doc, 0, tonumber(redis.call('HGET', M, 'seq')), next_id(), OLD_ROOT, table.concat(DELTAS)}
end
-- the commit's doc id and its counter deltas, for a retry of the same commit
local function remember(doc)
  if ARGV[11] ~= '' then
    local done = ARGV[12] .. ':' .. doc .. ':' .. table.concat(DELTAS)
    redis.call('SET', P .. ':n:' .. ARGV[11], done, 'EX', 3600)
  end
end
local done = replayed()
if done then
  local prev = redis.call('GET', P .. ':n:' .. ARGV[11])
  local at = string.find(prev, ':', string.find(prev, ':', 1, true) + 1, true)
  DELTAS = {string.sub(prev, at + 1)}
  return reply(done)
end
local host, status = ARGV[5], ARGV[6]
if status == 's' or status == 'r' then
  if late() then return redis.error_reply('NEARDUP_LATE') end
  bump(HC, status .. '|' .. host, 1)
  remember(-1)
  return reply(-1)
end
local doc, given = struct.unpack('<i4i4', ARGV[4])
local cur, snap = tonumber(redis.call('HGET', M, 'seq')), tonumber(ARGV[2])
if cur > snap then
  local looked, seen = {}, {}
  local lf, si = ARGV[10], ARGV[14]
  for j = 1, #lf - 5, 6 do looked[string.sub(lf, j, j + 3)] = true end
  for j = 1, #si - 3, 4 do seen[struct.unpack('<I4', si, j)] = true end
  if cur - snap > redis.call('LLEN', LOG) then return {-2, 0, cur, next_id()} end
  for _, e in ipairs(redis.call('LRANGE', LOG, snap - cur, -1)) do
    local _, other = struct.unpack('<I4I4', e)
    if not seen[other] then
      for j = 9, #e - 3, 4 do
        if looked[string.sub(e, j, j + 3)] then return {-2, 0, cur, next_id()} end
      end
    end
  end
end
if late() then return redis.error_reply('NEARDUP_LATE') end
if parent_of(doc) ~= nil then return redis.error_reply('NEARDUP_TAKEN doc id ' .. doc .. ' is committed') end
local seq = redis.call('HINCRBY', M, 'seq', 1)
local wf, hashes = ARGV[3], {}
for j = 1, #wf - 5, 6 do hashes[#hashes + 1] = string.sub(wf, j, j + 3) end
redis.call('RPUSH', LOG, struct.pack('<I4I4', seq, doc) .. table.concat(hashes))
redis.call('LTRIM', LOG, -tonumber(ARGV[15]), -1)
local code = code_of(host)
local dkey, dat = entry(doc)
redis.call('SETRANGE', dkey, dat, struct.pack('<I4I4', doc + 1, code + 1))
local u = ARGV[9]
for j = 1, #u - 7, 8 do
  local a, b = struct.unpack('<i4i4', u, j)
  local ra, rb = root_of(a), root_of(b)
  if ra >= 0 and rb >= 0 and ra ~= rb then
    union(ra, rb)
    local rkey, rat = entry(ra)
    redis.call('SETRANGE', rkey, rat, struct.pack('<I4', rb + 1))
  end
end
local root = -1
if given >= 0 then root = root_of(given) end
if root >= 0 then
  join(root, host)
  redis.call('SETRANGE', dkey, dat, struct.pack('<I4', root + 1))
else
  bump(HC, 'D|' .. host, 1)
end
local canon = ARGV[7]
if canon ~= '' and canon ~= host then bump(P .. ':cn:' .. host, canon, 1) end
redis.call('HINCRBY', M, 'count', 1)
local named = ARGV[17] or ''
if root >= 0 and named ~= '' then
  local mine = find(doc)
  for j = 1, #named - 3, 4 do
    local id = struct.unpack('<I4', named, j)
    if id ~= doc and find(id) == mine then
      OLD_ROOT = promote_in_table(doc, status)
      break
    end
  end
end
-- an index created again (NEARDUP_NOINDEX) under a commit in flight: never hand out its id again
if tonumber(redis.call('HGET', M, 'next')) <= doc then redis.call('HSET', M, 'next', doc + 1) end
bump(HC, 'p|' .. host, 1)
bump(HC, status .. '|' .. host, 1)
local nbytes = tonumber(ARGV[8])
bump(HC, 'b|' .. host, nbytes)
if status ~= 'u' then bump(HC, 'd|' .. host, nbytes) end
remember(doc)
return reply(doc)
