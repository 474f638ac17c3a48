-- ARGV: P, doc, its status code, doc, status code, ... -> {doc, old root, ... for the docs that
-- changed; the counter deltas}
local NAMES = {[0] = 'u', [1] = 'e', [2] = 'n'}
local out = {}
for i = 2, #ARGV - 1, 2 do
  local doc = tonumber(ARGV[i])
  local root = promote_in_table(doc, NAMES[tonumber(ARGV[i + 1])] or 'u')
  if root >= 0 then
    out[#out + 1] = doc
    out[#out + 1] = root
  end
end
return {out, table.concat(DELTAS)}
