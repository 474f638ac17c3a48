-- KEYS[1] a group's meta (routing); ARGV: 1 group base, 2 client, 3 client's counter batch, 4 host
-- whose page count to answer ('' none), then kind, host, field, n per delta (see bump in
-- cluster_table.lua) -> the host's pages. A batch already applied (a retry) is not applied again.
local B, want = ARGV[1], ARGV[4]
local mark = B .. ':n:' .. ARGV[2]
if redis.call('GET', mark) ~= ARGV[3] then
  for i = 5, #ARGV - 3, 4 do
    local kind, a, b, n = ARGV[i], ARGV[i + 1], ARGV[i + 2], tonumber(ARGV[i + 3])
    local key, field = B .. ':cn:' .. a, b
    if kind == 'h' then
      key, field = B .. ':hc', b .. '|' .. a
    elseif kind == 's' then
      key = B .. ':sh:' .. a
    end
    if redis.call('HINCRBY', key, field, n) == 0 then redis.call('HDEL', key, field) end
  end
  redis.call('SET', mark, ARGV[3], 'EX', 3600)
end
if want == '' then return 0 end
return tonumber(redis.call('HGET', B .. ':hc', 'p|' .. want) or '0')
