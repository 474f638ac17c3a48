-- ARGV of the commit part, shared by the commit and lookup-or-insert scripts:
-- 3 fields, 4 record, 5 host, 6 status, 7 canonical host, 8 nbytes, 9 unions, 10 ttl, 11 client, 12 seq,
-- 13 deadline (server time in seconds; 0: none), 14 the field of Commit.named_key ('' for none)
-- A record whose parent is >= 0 joins that page's cluster; -1 starts a cluster of its own.
-- ``seen`` maps a 6-byte field to its raw shard value as already read in this script (``false`` =
-- no such bucket, ``''`` = overflow marker); ``apply`` reuses it instead of reading the shard again.
local function apply(L, sp, seen)
  local host = ARGV[5]
  local hc = HC
  local status = ARGV[6]
  local ttl = tonumber(ARGV[10])
  local doc = -1
  if status == 's' or status == 'r' then
    redis.call('HINCRBY', hc, status .. '|' .. host, 1)
  else
    doc = redis.call('HINCRBY', M, 'next', 1) - 1
    local rec = ARGV[4]
    local given = struct.unpack('<i4', rec)
    rec = struct.pack('<i4', doc) .. string.sub(rec, 5)
    local dkey = P .. ':d:' .. doc
    if ttl > 0 then redis.call('SET', dkey, rec, 'EX', ttl) else redis.call('SET', dkey, rec) end
    local u = ARGV[9]
    for j = 1, #u - 7, 8 do
      local a, b = struct.unpack('<i4i4', u, j)
      local ra, rb = root_of(a), root_of(b)
      if ra >= 0 and rb >= 0 and ra ~= rb then
        union(ra, rb)
        redis.call('SETRANGE', P .. ':d:' .. ra, 0, struct.pack('<i4', rb))
      end
    end
    local root = -1
    if given >= 0 then root = root_of(given) end
    if root >= 0 then
      join(root, host)
      redis.call('SETRANGE', dkey, 0, struct.pack('<i4', root))
    else
      bump(HC, 'D|' .. host, 1)
    end
    local canon = ARGV[7]
    if canon ~= '' and canon ~= host then bump(P .. ':cn:' .. host, canon, 1) end
    local maxval = tonumber(redis.call('HGET', M, 'maxval'))
    local packed = struct.pack('<I4', doc)
    local fs = ARGV[3]
    local new_fields = 0
    for j = 1, #fs - 5, 6 do
      local f = string.sub(fs, j, j + 5)
      local sk = P .. ':s:' .. address(f, L, sp)
      local v = seen[f]
      if v == nil then v = redis.call('HGET', sk, f) end
      if v == false then
        redis.call('HSET', sk, f, packed)
        new_fields = new_fields + 1
        seen[f] = packed
      elseif v == '' then
        if redis.call('GETRANGE', P .. ':o:' .. f, -4, -1) ~= packed then
          redis.call('APPEND', P .. ':o:' .. f, packed)
        end
      elseif string.sub(v, -4) ~= packed then
        if #v + 4 > maxval then
          redis.call('SET', P .. ':o:' .. f, v .. packed)
          redis.call('HSET', sk, f, '')
          seen[f] = ''
        else
          redis.call('HSET', sk, f, v .. packed)
          seen[f] = v .. packed
        end
      end
    end
    local n = redis.call('HINCRBY', M, 'n', new_fields)
    redis.call('HINCRBY', hc, 'p|' .. host, 1)
    redis.call('HINCRBY', hc, status .. '|' .. host, 1)
    local nbytes = tonumber(ARGV[8])
    redis.call('HINCRBY', hc, 'b|' .. host, nbytes)
    if status ~= 'u' then redis.call('HINCRBY', hc, 'd|' .. host, nbytes) end
    -- a page of its cluster names its address canonical: it is the representative (Commit.named_key)
    local named = ARGV[14]
    if root >= 0 and named and named ~= '' then
      local v = bucket(named, L, sp)
      local mine = root_of(doc)
      for j = 1, math.min(#v, 4 * BUCKET_CAP) - 3, 4 do
        local id = struct.unpack('<I4', v, j)
        if id ~= doc and root_of(id) == mine then
          if promote_doc(doc) then PROMOTED = 1 end
          break
        end
      end
    end
    -- linear hashing: split shard sp while the mean load is above 'load'
    L, sp = split(P .. ':s:', M, L, sp, n, tonumber(redis.call('HGET', M, 'load')))
    -- expiry: prune one shard (expired ids are a prefix of every bucket)
    if ttl > 0 then
      local c = tonumber(redis.call('HGET', M, 'c') or '0')
      if c >= 2 ^ L + sp then c = 0 end
      local sk = P .. ':s:' .. c
      local all = redis.call('HGETALL', sk)
      local removed = 0
      for k = 1, #all, 2 do
        local f, v = all[k], all[k + 1]
        local okey = nil
        if v == '' then okey = P .. ':o:' .. f; v = redis.call('GET', okey) or '' end
        local cut = 1
        while cut <= #v - 3 and redis.call('EXISTS', P .. ':d:' .. struct.unpack('<I4', v, cut)) == 0 do
          cut = cut + 4
        end
        if cut > 1 then
          local rest = string.sub(v, cut)
          if rest == '' then
            redis.call('HDEL', sk, f)
            if okey then redis.call('DEL', okey) end
            removed = removed + 1
          elseif okey then
            redis.call('SET', okey, rest)
          else
            redis.call('HSET', sk, f, rest)
          end
        end
      end
      if removed > 0 then redis.call('HINCRBY', M, 'n', -removed) end
      redis.call('HSET', M, 'c', c + 1)
    end
  end
  if ARGV[11] ~= '' then redis.call('SET', P .. ':n:' .. ARGV[11], ARGV[12] .. ':' .. doc, 'EX', 3600) end
  return doc
end
