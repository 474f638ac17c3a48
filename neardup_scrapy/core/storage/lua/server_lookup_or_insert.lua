-- ARGV: 1 prefix, 2 cap, 3..14 the provisional commit (see server_apply.lua), 15.. lookup fields
-- -> {values, ids, records, roots, candidates, {}} like server_lookup.lua when a looked-up bucket holds a
-- live page, else {{}, {}, {}, {}, 0, {doc_id, host_pages}} after applying the commit
if redis.replicate_commands then redis.replicate_commands() end  -- TIME before writes (Redis < 5)
local L, sp = meta()
if not L then return redis.error_reply('NEARDUP_NOINDEX') end
local done = replayed()
if done then return {{}, {}, {}, {}, 0, commit_result(done)} end
local cap = tonumber(ARGV[2])
local values, ids, seen, raw = {}, {}, {}, {}
for i = 15, #ARGV do
  local f = ARGV[i]
  local v = raw[f]
  if v == nil then
    v = redis.call('HGET', P .. ':s:' .. address(f, L, sp), f)
    raw[f] = v
  end
  if v == false then v = '' elseif v == '' then v = redis.call('GET', P .. ':o:' .. f) or '' end
  values[#values + 1] = trimmed(v)
  for j = 1, math.min(#v, 4 * BUCKET_CAP) - 3, 4 do
    local id = struct.unpack('<I4', v, j)
    if not seen[id] then seen[id] = true; ids[#ids + 1] = id end
  end
end
local ncand = #ids
local recs, roots, live = records(ids, seen, cap)
if ncand > cap then
  for k = 1, ncand do
    if redis.call('EXISTS', P .. ':d:' .. ids[k]) == 1 then live = true; break end
  end
end
if live then return {values, ids, recs, roots, ncand, {}} end
if late() then return redis.error_reply('NEARDUP_LATE') end
return {{}, {}, {}, {}, 0, commit_result(apply(L, sp, raw))}
