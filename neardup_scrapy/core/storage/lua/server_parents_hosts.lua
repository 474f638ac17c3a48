-- ARGV: prefix, first, count -> per id: its parent (-2: no record) and its host
local parents, hosts = {}, {}
local first = tonumber(ARGV[2])
for i = 0, tonumber(ARGV[3]) - 1 do
  local p = parent_of(first + i)
  parents[#parents + 1] = p or -2
  hosts[#hosts + 1] = (p and host_of(first + i)) or ''
end
return {parents, hosts}
