-- ARGV: prefix, first, count -> per id: 16-byte head ('' if expired)
local P = ARGV[1]
local out = {}
local first = tonumber(ARGV[2])
for i = 0, tonumber(ARGV[3]) - 1 do
  out[#out + 1] = redis.call('GETRANGE', P .. ':d:' .. (first + i), 0, 15)
end
return out
