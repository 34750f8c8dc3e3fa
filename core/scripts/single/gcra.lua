-- GCRA, checks of one limit without a block: the common call, in a script
-- of its own without the general script's parts (tables per limit, helper
-- closures), so it costs the Redis thread less. Same layout and the same
-- decisions as ../gcra.lua (script_diff_tests and coalesce_tests hold them
-- to it); every other call goes there. The build puts common/prelude.lua
-- (now, the costs, ttl_ms, the reply) in front.
--
-- KEYS[1]  the STRING TAT (us)    ARGV[4..6]  window_us, capacity, interval_us
-- (the reply's limit is the capacity)
local window, cap, interval = tonumber(ARGV[4]), tonumber(ARGV[5]), tonumber(ARGV[6])
local tat = now
local v = redis.call('GET', KEYS[1])
if v then
  tat = tonumber(v)
  if tat < now then tat = now end
end
local tau = interval * cap

-- Each check in turn, in memory; one write for all of them after.
local admitted = false
for j = 1, checks do
  if costs then cost = costs[j] end
  local allowed, retry_ms = 1, 0
  local over = tat + interval * cost - now - tau
  if over > 0 then
    allowed, retry_ms = 0, math.ceil(over / 1000)
  else
    tat, admitted = tat + interval * cost, true
  end
  -- remaining = floor((tau - (tat - now)) / interval), exact whatever the
  -- rounding of the division
  local a = tau - (tat - now)
  local remaining = math.floor(a / interval)
  if remaining * interval > a then remaining = remaining - 1 elseif (remaining + 1) * interval <= a then remaining = remaining + 1 end
  if remaining < 0 then remaining = 0 end  -- a TAT from a clock that stepped back
  local reset_ms = 0
  if tat > now then reset_ms = math.ceil((tat - now) / 1000) end
  answer(j, allowed, cap, remaining, retry_ms, reset_ms)
end

if admitted then
  if tat <= now then
    redis.call('DEL', KEYS[1])
  else
    -- Expiry: when the bucket is full again (one window of slack for
    -- caller-supplied time).
    redis.call('SET', KEYS[1], string.format('%d', tat), 'PX', ttl_ms(tat - now, window))
  end
end
return replies()
