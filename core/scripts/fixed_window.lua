-- Fixed window: a counter per window-aligned interval [k*window, (k+1)*window).
-- O(1) memory; up to 2*limit units can pass around a window edge.
--
-- KEYS[i]  a HASH for limit i: w = start of the counted window (us), n = units
-- ARGV[1]  'check', 'peek' or 'refund' (give cost units back, then peek)
-- ARGV[2]  cost
-- ARGV[3]  now_us, or '' for the server's TIME
-- ARGV[4]  token (unused)
-- ARGV[5]  block_us     punitive block after a denial (0: none); KEYS[n+1] then
--                       holds when the block ends
-- ARGV[5+4(i-1)+1..4]   limit i: limit, window_us, capacity, interval_us
-- Returns {allowed, then per limit: limit, remaining, retry_after_ms, reset_after_ms}.
--
-- The window start is stored with the count, so a caller-supplied time gives
-- the same answer however long the key has lived; PEXPIRE only frees memory.
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

-- Start of the window holding t; the correction makes it exact whatever the
-- rounding of the division.
local function window_start(t, window)
  local s = math.floor(t / window) * window
  if s > t then s = s - window elseif s + window <= t then s = s + window end
  return s
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
-- Refund: give back up to `cost` units of the current window, then peek.
if op == 'refund' then
  for i = 1, n do
    local window = tonumber(ARGV[5 + 4 * (i - 1) + 2])
    local st = redis.call('HMGET', KEYS[i], 'w', 'n')
    local w, c = tonumber(st[1]), tonumber(st[2])
    if w and c and w >= window_start(now, window) then
      c = c - cost
      if c < 0 then c = 0 end
      redis.call('HSET', KEYS[i], 'n', string.format('%d', c))
    end
  end
  op, cost = 'peek', 1
end
local allowed = 1
local start, count, limit, window = {}, {}, {}, {}
for i = 1, n do
  local base = 5 + 4 * (i - 1)
  limit[i] = tonumber(ARGV[base + 1])
  window[i] = tonumber(ARGV[base + 2])
  start[i] = window_start(now, window[i])
  count[i] = 0
  local st = redis.call('HMGET', KEYS[i], 'w', 'n')
  local w, c = tonumber(st[1]), tonumber(st[2])
  if w and c then
    if w == start[i] then
      count[i] = c
    elseif w > start[i] then  -- the clock stepped back: stay in the stored window
      start[i] = w
      count[i] = c
    end
  end
  if count[i] + cost > limit[i] then allowed = 0 end
end

if blocked_until > 0 then
  allowed = 0
elseif op == 'check' and allowed == 0 and block_us > 0 then
  blocked_until = now + block_us
  redis.call('SET', KEYS[n + 1], string.format('%d', blocked_until), 'PX', string.format('%d', us_to_ms(block_us)))
end

if op == 'check' and allowed == 1 then
  for i = 1, n do
    count[i] = count[i] + cost
    redis.call('HSET', KEYS[i], 'w', string.format('%d', start[i]), 'n', string.format('%d', count[i]))
    local ttl = us_to_ms(start[i] + window[i] - now)
    if ttl < 1 then ttl = 1 end
    redis.call('PEXPIRE', KEYS[i], string.format('%d', ttl))
  end
end

local out = {allowed}
for i = 1, n do
  local to_end = start[i] + window[i] - now
  local retry_us, reset_us = 0, 0
  if count[i] + cost > limit[i] and not (op == 'check' and allowed == 1) then retry_us = to_end end
  if count[i] > 0 then reset_us = to_end end
  local remaining = limit[i] - count[i]
  if remaining < 0 then remaining = 0 end
  out[#out + 1] = limit[i]
  out[#out + 1] = remaining
  out[#out + 1] = us_to_ms(blocked(retry_us))
  out[#out + 1] = us_to_ms(reset_us)
end
return out
