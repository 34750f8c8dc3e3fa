-- Fixed window: a counter per window-aligned interval [k*window, (k+1)*window).
-- O(1) memory; up to 2*limit units can pass around a window edge.
--
-- KEYS[i]  a HASH for limit i: w = start of the counted window (us), n = units
-- ARGV[1..3]  op, cost, now_us, then the limits, then block_us if any: see
--              common/prelude.lua, which the build puts in front of this file
-- ARGV[3+2(i-1)+1..2]   limit i: limit, window_us
-- Returns {allowed, then per limit: limit, remaining, retry_after_ms, reset_after_ms}
-- (per check, one after another, for op 'checks').
--
-- The window start is stored with the count; PEXPIRE frees the key when its
-- window has ended (one window later for caller-supplied time: see ttl_ms).

limits(2)
local start, count, limit, window, refunded, stored = {}, {}, {}, {}, {}, {}
for i = 1, n do
  local base = 3 + 2 * (i - 1)
  limit[i] = tonumber(ARGV[base + 1])
  window[i] = tonumber(ARGV[base + 2])
  start[i] = window_start(now, window[i])
  count[i] = 0
  local st = redis.call('HMGET', KEYS[i], 'w', 'n')
  local w, c = tonumber(st[1]), tonumber(st[2])
  if w and c then
    if w == start[i] then
      count[i] = c
      stored[i] = true
    elseif w > start[i] then  -- the clock stepped back: stay in the stored window
      start[i] = w
      count[i] = c
    end
    -- Refund: give back up to `cost` units of the current window.
    if op == 'refund' and w >= window_start(now, window[i]) then
      count[i] = math.max(0, count[i] - cost)
      refunded[i] = true
    end
  end
end
if op == 'refund' then op, costs = 'peek', {1} end

-- Each check in turn (one, or the coalesced ones): a decision in memory.
local out, admitted = {}, false
for _, c in ipairs(costs) do
  cost = c
  local allowed = 1
  for i = 1, n do
    if count[i] + cost > limit[i] then allowed = 0 end
  end
  allowed = apply_block(allowed)
  local admit = op == 'check' and allowed == 1
  if admit then
    admitted = true
    for i = 1, n do count[i] = count[i] + cost end
  end
  out[#out + 1] = allowed
  for i = 1, n do
    local to_end = start[i] + window[i] - now
    local retry_us, reset_us = 0, 0
    if count[i] + cost > limit[i] and not admit then retry_us = to_end end
    if count[i] > 0 then reset_us = to_end end
    local remaining = limit[i] - count[i]
    if remaining < 0 then remaining = 0 end
    out[#out + 1] = limit[i]
    out[#out + 1] = remaining
    out[#out + 1] = us_to_ms(blocked(retry_us))
    out[#out + 1] = us_to_ms(reset_us)
  end
end

-- Writes come after every read and decision: the state the checks leave,
-- as their writes one after another would leave it.
for i = 1, n do
  if admitted then
    redis.call('HSET', KEYS[i], 'w', string.format('%d', start[i]), 'n', string.format('%d', count[i]))
    -- With the server's clock the key's expiry is the window's end, already
    -- set by the write that started this window. (Caller-supplied time
    -- moves it with the caller's clock: set every time, as always.)
    if not (stored[i] and ARGV[3] == '') then
      redis.call('PEXPIRE', KEYS[i], ttl_ms(start[i] + window[i] - now, window[i]))
    end
  elseif refunded[i] then
    redis.call('HSET', KEYS[i], 'n', string.format('%d', count[i]))
  end
end
return out
