-- ARGV: P, id... -> per id its cluster root, -1 when not committed
local out = {}
for i = 2, #ARGV do out[#out + 1] = find(tonumber(ARGV[i])) end
return out
