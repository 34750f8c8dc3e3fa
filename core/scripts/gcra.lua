-- GCRA (generic cell rate algorithm), the token bucket as one timestamp: the
-- theoretical arrival time (TAT) of the next unit. Units are emitted every
-- interval_us = ceil(window/limit); up to `capacity` (the burst) pass at once.
-- O(1) memory per key, smooth: no window edges.
--
-- KEYS[i]  a STRING for limit i: the TAT in microseconds
-- ARGV[1]  'check', 'peek' or 'refund' (give cost units back, then peek)
-- ARGV[2]  cost
-- ARGV[3]  now_us, or '' for the server's TIME
-- ARGV[4]  token (unused)
-- ARGV[5]  block_us     punitive block after a denial (0: none); KEYS[n+1] then
--                       holds when the block ends
-- ARGV[5+4(i-1)+1..4]   limit i: limit, window_us, capacity, interval_us
-- Returns {allowed, then per limit: capacity, remaining, retry_after_ms, reset_after_ms}.
-- interval_us * capacity <= 2^50 and now <= 2^52 (checked by the library), so
-- every sum stays below 2^53 and exact.
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

local block_us = tonumber(ARGV[5])
local n = (#ARGV - 5) / 4
-- Punitive block: KEYS[n+1] holds the time the block ends (a denied check
-- starts one of block_us when block_us > 0).
local blocked_until = 0
if block_us > 0 and op ~= 'refund' then
  local v = redis.call('GET', KEYS[n + 1])
  if v and tonumber(v) > now then blocked_until = tonumber(v) end
end
local function blocked(retry_us)
  if blocked_until - now > retry_us then return blocked_until - now end
  return retry_us
end
-- Refund: move the TAT back by `cost` emissions (not before now), then peek.
if op == 'refund' then
  for i = 1, n do
    local interval = tonumber(ARGV[5 + 4 * (i - 1) + 4])
    local v = redis.call('GET', KEYS[i])
    if v then
      local t = tonumber(v) - interval * cost
      if t <= now then
        redis.call('DEL', KEYS[i])
      else
        redis.call('SET', KEYS[i], string.format('%d', t), 'PX', string.format('%d', us_to_ms(t - now)))
      end
    end
  end
  op, cost = 'peek', 1
end
local allowed = 1
local cap, interval, tat = {}, {}, {}
for i = 1, n do
  local base = 5 + 4 * (i - 1)
  cap[i] = tonumber(ARGV[base + 3])
  interval[i] = tonumber(ARGV[base + 4])
  local v = redis.call('GET', KEYS[i])
  local t = now
  if v then t = tonumber(v) end
  if t < now then t = now end
  tat[i] = t
  if t + interval[i] * cost - now > interval[i] * cap[i] then allowed = 0 end
end

if blocked_until > 0 then
  allowed = 0
elseif op == 'check' and allowed == 0 and block_us > 0 then
  blocked_until = now + block_us
  redis.call('SET', KEYS[n + 1], string.format('%d', blocked_until), 'PX', string.format('%d', us_to_ms(block_us)))
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
  out[#out + 1] = us_to_ms(blocked(retry_us))
  out[#out + 1] = us_to_ms(t - now)
end
return out
