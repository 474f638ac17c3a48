-- Page records, RECORDS_PER_FIELD (4) to a field of a hash of records (see cluster_codec.py):
-- four u32 lengths (little-endian), then the records in slot order. ``slot`` is 0-based.

local function records_of(value)
  if not value or #value < 16 then
    return {'', '', '', ''}
  end
  local a, b, c, d = struct.unpack('<I4I4I4I4', value)
  local out, at = {}, 17
  for i, n in ipairs({a, b, c, d}) do
    out[i] = string.sub(value, at, at + n - 1)
    at = at + n
  end
  return out
end

-- Write the records of a field back; a field with no record left is deleted.
local function records_save(key, field, recs)
  if recs[1] == '' and recs[2] == '' and recs[3] == '' and recs[4] == '' then
    redis.call('HDEL', key, field)
  else
    redis.call('HSET', key, field,
      struct.pack('<I4I4I4I4', #recs[1], #recs[2], #recs[3], #recs[4]) .. table.concat(recs))
  end
end
