-- ARGV: prefix, doc... -> the docs that became their cluster's representative, each followed by
-- its old root (see server_promote_doc.lua)
local out = {}
for i = 2, #ARGV do
  local doc = tonumber(ARGV[i])
  local root = promote_doc(doc)
  if root then
    out[#out + 1] = doc
    out[#out + 1] = root
  end
end
return out
