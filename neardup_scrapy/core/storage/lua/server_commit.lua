-- ARGV: 1 prefix, 2 token, 3..14 the commit (see server_apply.lua)
-- -> {-2} on conflict, else {doc_id, host_pages}; error NEARDUP_LATE past the deadline
if redis.replicate_commands then redis.replicate_commands() end  -- TIME before writes (Redis < 5)
local L, sp = meta()
if not L then return redis.error_reply('NEARDUP_NOINDEX') end
local done = replayed()
if done then return commit_result(done) end
local tok = ARGV[2]
local nt = #tok / 10
local seen = {}  -- field -> shard value read by the token check, reused by the insert
for i = 0, nt - 1 do
  local f = string.sub(tok, i * 6 + 1, i * 6 + 6)
  local want = string.sub(tok, nt * 6 + i * 4 + 1, nt * 6 + i * 4 + 4)
  local v = redis.call('HGET', P .. ':s:' .. address(f, L, sp), f)
  seen[f] = v
  local last = '\255\255\255\255'
  if v == '' then
    local o = redis.call('GETRANGE', P .. ':o:' .. f, -4, -1)
    if #o == 4 then last = o end
  elseif v and #v >= 4 then
    last = string.sub(v, -4)
  end
  if last ~= want then return {-2} end
end
if late() then return redis.error_reply('NEARDUP_LATE') end
return commit_result(apply(L, sp, seen))
