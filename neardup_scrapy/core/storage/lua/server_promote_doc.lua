-- A page becomes its cluster's representative (see IndexStorage.promote): the parents, the two
-- records' status, Hamming distance and similarity (swapped: the pair is the same both ways), the
-- hosts' counters and the cluster's evidence key (renamed to the new root). Returns the old root
-- (nil: nothing changed).
local NAMES = {[0] = 'u', [1] = 'e', [2] = 'n'}
local function promote_doc(doc)
  local dkey = P .. ':d:' .. doc
  local head = redis.call('GETRANGE', dkey, 0, 7)
  if #head < 8 then return nil end
  local root = find(doc, struct.unpack('<i4', head))
  local rkey = P .. ':d:' .. root
  if root == doc or redis.call('EXISTS', rkey) == 0 then return nil end
  redis.call('SETRANGE', rkey, 0, struct.pack('<i4', doc) .. string.sub(head, 5, 8))
  redis.call('SETRANGE', dkey, 0, struct.pack('<i4', doc) .. UNIQUE_TAIL)
  local st = NAMES[string.byte(head, 5)] or 'u'
  if st ~= 'u' then
    local hd, hr = host_of(doc), host_of(root)
    redis.call('HINCRBY', HC, st .. '|' .. hd, -1)
    redis.call('HINCRBY', HC, 'u|' .. hd, 1)
    redis.call('HINCRBY', HC, 'u|' .. hr, -1)
    redis.call('HINCRBY', HC, st .. '|' .. hr, 1)
  end
  hosts_move(root, doc)
  return root
end
