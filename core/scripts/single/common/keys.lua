-- keys.lua: the end of a keys call's script. The build makes one per
-- single-check script: this prelude, then that script's text as the body of
-- `decide(KEYS)`, then this file. A keys call decides checks of one limit
-- on DIFFERENT keys (or one key repeated) in one script call, each exactly
-- as its own call would (the same body, one key at a time, in order), so
-- that a batch of keys pays the server's per-call work once
-- (core/src/redis_backend.cpp: check_many, and the lanes).
--
-- ARGV[1] 'keys'   ARGV[2] one cost per key, comma-separated   KEYS[i] check i's key
-- The reply: each key's reply in order, joined by spaces. A key whose body
-- fails (raises an error, or returns an error reply: a key of another type,
-- found before any write, as every body reads first, so the key is left as
-- it was) answers FAILED instead, and the caller sends that check again on
-- its own, where the error is its own.
local FAILED = '-1 -1 -1 -1 -1'  -- allowed, then one limit's four numbers
local out, i = {}, 0
for c in string.gmatch(ARGV[2], '[^,]+') do
  i = i + 1
  cost = tonumber(c)
  local ok, r = pcall(decide, {KEYS[i]})
  if ok and type(r) == 'string' then out[i] = r else out[i] = FAILED end
end
return table.concat(out, ' ')
