-- A page becomes its cluster's representative (IndexStorage.promote), on {P}: the page table's
-- parents, the hosts' counters (``st``: the page's status char) and the cluster's evidence key.
-- Returns the old root (-1: nothing changed). The records' heads (other slots) are swapped after,
-- by cluster_set_tail.lua.
local function promote_in_table(doc, st)
  local root = find(doc)
  if root < 0 or root == doc then return -1 end
  local dkey, dat = entry(doc)
  local rkey, rat = entry(root)
  redis.call('SETRANGE', dkey, dat, struct.pack('<I4', doc + 1))
  redis.call('SETRANGE', rkey, rat, struct.pack('<I4', doc + 1))
  if st ~= 'u' then
    local hd, hr = host_of(doc), host_of(root)
    bump(P .. ':hc', st .. '|' .. hd, -1)
    bump(P .. ':hc', 'u|' .. hd, 1)
    bump(P .. ':hc', 'u|' .. hr, -1)
    bump(P .. ':hc', st .. '|' .. hr, 1)
  end
  hosts_move(root, doc)
  return root
end
