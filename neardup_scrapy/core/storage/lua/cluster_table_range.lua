-- ARGV: P, first, count -> the page table's bytes for ids first .. first + count - 1 (one chunk)
local first, count = tonumber(ARGV[2]), tonumber(ARGV[3])
local at = 8 * (first % 1048576)
return redis.call('GETRANGE', ARGV[1] .. ':t:' .. math.floor(first / 1048576), at, at + 8 * count - 1)
