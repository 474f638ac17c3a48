-- ARGV: prefix, cap, field...  ->  {values, ids, records, roots, candidates}
local L, sp = meta()
if not L then return redis.error_reply('NEARDUP_NOINDEX') end
local cap = tonumber(ARGV[2])
local values, ids, seen = {}, {}, {}
for i = 3, #ARGV do
  local v = bucket(ARGV[i], L, sp)
  values[#values + 1] = trimmed(v)
  for j = 1, math.min(#v, 4 * BUCKET_CAP) - 3, 4 do
    local id = struct.unpack('<I4', v, j)
    if not seen[id] then seen[id] = true; ids[#ids + 1] = id end
  end
end
local ncand = #ids
local recs, roots = records(ids, seen, cap)
return {values, ids, recs, roots, ncand}
