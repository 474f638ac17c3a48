-- Per-cluster host tables of the single-server store: a hash ``P:ch:<root>`` (host -> pages) per
-- cluster of several pages. ``hosts_load`` answers nil for none; ``hosts_save`` with ``{}`` deletes.
-- ``bump`` adds to the counters (host counters and mirror evidence) in place.
local function hosts_load(root)
  local all = redis.call('HGETALL', P .. ':ch:' .. root)
  if #all == 0 then return nil end
  local t = {}
  for k = 1, #all, 2 do t[all[k]] = tonumber(all[k + 1]) end
  return t
end
local function hosts_save(root, flat)
  local key = P .. ':ch:' .. root
  redis.call('DEL', key)
  if #flat > 0 then redis.call('HSET', key, unpack(flat)) end
end
local function hosts_move(from, to)
  if redis.call('EXISTS', P .. ':ch:' .. from) == 1 then
    redis.call('RENAME', P .. ':ch:' .. from, P .. ':ch:' .. to)
  end
end
-- add n to a counter field of hash key (P:hc, P:sh:<host>, P:cn:<host>); a field at 0 goes
local function bump(key, field, n)
  if n ~= 0 and redis.call('HINCRBY', key, field, n) == 0 then redis.call('HDEL', key, field) end
end
