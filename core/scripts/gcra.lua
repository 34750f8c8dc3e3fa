-- GCRA (generic cell rate algorithm), the token bucket as one timestamp: the
-- theoretical arrival time (TAT) of the next unit. Units are emitted every
-- interval_us = ceil(window/limit); up to `capacity` (the burst) pass at once.
-- O(1) memory per key, smooth: no window edges.
--
-- KEYS[i]  a STRING for limit i: the TAT in microseconds
-- ARGV[1..3]  op, cost, now_us, then the limits, then block_us if any: see
--              common/prelude.lua, which the build puts in front of this file
-- ARGV[3+3(i-1)+1..3]   limit i: window_us, capacity, interval_us
-- Returns {allowed, then per limit: capacity, remaining, retry_after_ms, reset_after_ms}
-- (per check, one after another, for op 'checks').
-- interval_us * capacity <= 2^50 and now <= 2^52 (checked by the library), so
-- every sum stays below 2^53 and exact.

-- floor(a / b) for integers, exact whatever the rounding of the division.
local function floor_div(a, b)
  local q = math.floor(a / b)
  if q * b > a then q = q - 1 elseif (q + 1) * b <= a then q = q + 1 end
  return q
end

-- Read every TAT; nothing is written before all are read and decided.
local cap, interval, window, stored = {}, {}, {}, {}
limits(3)
for i = 1, n do
  local base = 3 + 3 * (i - 1)
  window[i] = tonumber(ARGV[base + 1])
  cap[i] = tonumber(ARGV[base + 2])
  interval[i] = tonumber(ARGV[base + 3])
  local v = redis.call('GET', KEYS[i])
  if v then stored[i] = tonumber(v) end
end

-- Refund: move the TAT back by `cost` emissions (not before now), then peek.
local refunded = false
if op == 'refund' then
  for i = 1, n do
    if stored[i] then stored[i] = stored[i] - interval[i] * cost end
  end
  refunded = true
  op, costs = 'peek', {1}
end

-- Each check in turn (one, or the coalesced ones), in memory; final[i] is
-- the TAT to write: what an admission (or a refund) left.
local out, final = {}, {}
if refunded then
  for i = 1, n do final[i] = stored[i] end
end
for _, c in ipairs(costs) do
  cost = c
  local allowed = 1
  local tat = {}
  for i = 1, n do
    local t = stored[i] or now
    if t < now then t = now end
    tat[i] = t
    if t + interval[i] * cost - now > interval[i] * cap[i] then allowed = 0 end
  end
  allowed = apply_block(allowed)
  out[#out + 1] = allowed
  for i = 1, n do
    local tau = interval[i] * cap[i]
    local t = tat[i]
    local retry_us = 0
    if op == 'check' and allowed == 1 then
      t = t + interval[i] * cost
      stored[i], final[i] = t, t
    else
      local over = t + interval[i] * cost - now - tau
      if over > 0 then retry_us = over end
    end
    out[#out + 1] = cap[i]
    local remaining = floor_div(tau - (t - now), interval[i])
    if remaining < 0 then remaining = 0 end  -- a TAT from a clock that stepped back
    out[#out + 1] = remaining
    out[#out + 1] = us_to_ms(blocked(retry_us))
    out[#out + 1] = us_to_ms(t - now)
  end
end

-- Writes, after every read and decision.
for i = 1, n do
  local t = final[i]
  if t then
    if t <= now then
      redis.call('DEL', KEYS[i])
    else
      redis.call('SET', KEYS[i], string.format('%d', t), 'PX', ttl_ms(t - now, window[i]))
    end
  end
end
return out
