-- GCRA (generic cell rate algorithm), the token bucket as one timestamp: the
-- theoretical arrival time (TAT) of the next unit. Units are emitted every
-- interval_us = ceil(window/limit); up to `capacity` (the burst) pass at once.
-- O(1) memory per key, smooth: no window edges.
--
-- KEYS[i]  a STRING for limit i: the TAT in microseconds
-- ARGV[1]  'check' or 'peek'
-- ARGV[2]  cost
-- ARGV[3]  now_us, or '' for the server's TIME
-- ARGV[4]  token (unused)
-- ARGV[4+4(i-1)+1..4]   limit i: limit, window_us, capacity, interval_us
-- Returns {allowed, then per limit: capacity, remaining, retry_after_ms, reset_after_ms}.
-- interval_us * capacity < 2^52 (checked by the library), so every sum stays exact.
local op = ARGV[1]
local cost = tonumber(ARGV[2])
local now
if ARGV[3] == '' then
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000000 + tonumber(t[2])
else
  now = tonumber(ARGV[3])
end

local function us_to_ms(us)
  if us <= 0 then return 0 end
  return math.ceil(us / 1000)
end

-- floor(a / b) for integers, exact whatever the rounding of the division.
local function floor_div(a, b)
  local q = math.floor(a / b)
  if q * b > a then q = q - 1 elseif (q + 1) * b <= a then q = q + 1 end
  return q
end

local n = #KEYS
local allowed = 1
local cap, interval, tat = {}, {}, {}
for i = 1, n do
  local base = 4 + 4 * (i - 1)
  cap[i] = tonumber(ARGV[base + 3])
  interval[i] = tonumber(ARGV[base + 4])
  local v = redis.call('GET', KEYS[i])
  local t = now
  if v then t = tonumber(v) end
  if t < now then t = now end
  tat[i] = t
  if t + interval[i] * cost - now > interval[i] * cap[i] then allowed = 0 end
end

local out = {allowed}
for i = 1, n do
  local tau = interval[i] * cap[i]
  local t = tat[i]
  local retry_us = 0
  if op == 'check' and allowed == 1 then
    t = t + interval[i] * cost
    redis.call('SET', KEYS[i], string.format('%d', t), 'PX', string.format('%d', us_to_ms(t - now)))
  else
    local over = t + interval[i] * cost - now - tau
    if over > 0 then retry_us = over end
  end
  out[#out + 1] = cap[i]
  local remaining = floor_div(tau - (t - now), interval[i])
  if remaining < 0 then remaining = 0 end  -- a TAT from a clock that stepped back
  out[#out + 1] = remaining
  out[#out + 1] = us_to_ms(retry_us)
  out[#out + 1] = us_to_ms(t - now)
end
return out
