-- ARGV: prefix, id...  ->  {records, roots}
local recs, roots = {}, {}
for i = 2, #ARGV do
  local id = tonumber(ARGV[i])
  local r = redis.call('GET', P .. ':d:' .. id)
  if r then
    recs[#recs + 1] = r
    roots[#roots + 1] = find(id, struct.unpack('<i4', r))
  else
    recs[#recs + 1] = ''
    roots[#roots + 1] = -1
  end
end
return {recs, roots}
