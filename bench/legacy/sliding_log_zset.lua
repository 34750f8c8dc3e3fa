-- prelude.lua: the start of every algorithm script. The build puts this text
-- in front of each core/scripts/*.lua file (Redis runs one self-contained
-- text per script; the SHA1 is that of the joined text).
--
-- ARGV[1] op: 'check', 'peek' or 'refund'   ARGV[2] cost
-- ARGV[3] now_us, or '' for the server's TIME   ARGV[4] token (unique per call)
-- ARGV[5] block_us: punitive block after a denied check (0: none); KEYS[n+1]
--         then holds when the block ends
-- ARGV[6..] four values per limit; n limits, KEYS[1..n] their state
--
-- Numbers are formatted with %d before they reach redis.call: Lua 5.1 would
-- print a 16-digit timestamp with %.14g and lose its last digits.
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

-- Refund for the window counters (fixed window, sliding counter): give back
-- up to `cost` units of the current window, counted in hash field `field`.
local function refund_current_window(field)
  for i = 1, (#ARGV - 5) / 4 do
    local window = tonumber(ARGV[5 + 4 * (i - 1) + 2])
    local st = redis.call('HMGET', KEYS[i], 'w', field)
    local w, c = tonumber(st[1]), tonumber(st[2])
    if w and c and w >= window_start(now, window) then
      c = c - cost
      if c < 0 then c = 0 end
      redis.call('HSET', KEYS[i], field, string.format('%d', c))
    end
  end
end

local block_us = tonumber(ARGV[5])
local n = (#ARGV - 5) / 4
local blocked_until = 0
if block_us > 0 and op ~= 'refund' then
  local v = redis.call('GET', KEYS[n + 1])
  if v and tonumber(v) > now then blocked_until = tonumber(v) end
end

-- The wait a caller is told: at least until a running block ends.
local function blocked(retry_us)
  if blocked_until - now > retry_us then return blocked_until - now end
  return retry_us
end

-- A blocked key is denied; a check that the limits deny starts a block.
-- Returns the final allowed flag.
local function apply_block(allowed)
  if blocked_until > 0 then return 0 end
  if op == 'check' and allowed == 0 and block_us > 0 then
    blocked_until = now + block_us
    redis.call('SET', KEYS[n + 1], string.format('%d', blocked_until), 'PX', string.format('%d', us_to_ms(block_us)))
  end
  return allowed
end

-- Sliding-window log: one ZSET member per admitted unit, scored by its
-- admission time in microseconds. Exact: `limit` units in any window.
--
-- KEYS[i]  the log of limit i (one key per limit; all share one hash tag)
-- ARGV[1..5]  op, cost, now_us, token, block_us: see common/prelude.lua, which
--              the build puts in front of this file
-- ARGV[4]  token: members are token..':'..j, so two requests in the same
--          microsecond are two entries
-- ARGV[5+4(i-1)+1..4]   limit i: limit, window_us, capacity, interval_us
-- Returns {allowed, then per limit: limit, remaining, retry_after_ms, reset_after_ms}.
-- Every limit must admit or none consumes.

-- Refund: give back up to `cost` of the newest units, then report as a peek.
if op == 'refund' then
  for i = 1, n do
    local window = tonumber(ARGV[5 + 4 * (i - 1) + 2])
    redis.call('ZREMRANGEBYSCORE', KEYS[i], '-inf', string.format('%d', now - window))
    local k = math.min(cost, redis.call('ZCARD', KEYS[i]))
    if k > 0 then redis.call('ZPOPMAX', KEYS[i], k) end
  end
  op, cost = 'peek', 1
end
local allowed = 1
local count, retry = {}, {}
for i = 1, n do
  local key = KEYS[i]
  local base = 5 + 4 * (i - 1)
  local limit = tonumber(ARGV[base + 1])
  local window = tonumber(ARGV[base + 2])
  -- An entry scored s counts while now < s + window.
  local edge = string.format('%d', now - window)
  if op == 'peek' then
    count[i] = redis.call('ZCOUNT', key, '(' .. edge, '+inf')
  else
    redis.call('ZREMRANGEBYSCORE', key, '-inf', edge)
    count[i] = redis.call('ZCARD', key)
  end
  retry[i] = 0
  local need = count[i] + cost - limit  -- entries that must leave the window first
  if need > 0 then
    allowed = 0
    local e = redis.call('ZRANGEBYSCORE', key, '(' .. edge, '+inf', 'WITHSCORES', 'LIMIT', need - 1, 1)
    retry[i] = tonumber(e[2]) + window - now
  end
end

allowed = apply_block(allowed)

if op == 'check' and allowed == 1 then
  local score = string.format('%d', now)
  local token = ARGV[4]
  for i = 1, n do
    local key = KEYS[i]
    local window = tonumber(ARGV[5 + 4 * (i - 1) + 2])
    local args = {}
    for j = 1, cost do
      args[#args + 1] = score
      args[#args + 1] = token .. ':' .. j
      if #args >= 1000 then
        redis.call('ZADD', key, unpack(args))
        args = {}
      end
    end
    if #args > 0 then redis.call('ZADD', key, unpack(args)) end
    redis.call('PEXPIRE', key, string.format('%d', us_to_ms(window)))
    count[i] = count[i] + cost
  end
end

local out = {allowed}
for i = 1, n do
  local key = KEYS[i]
  local limit = tonumber(ARGV[5 + 4 * (i - 1) + 1])
  local window = tonumber(ARGV[5 + 4 * (i - 1) + 2])
  local reset_us = 0
  if count[i] > 0 then
    local newest = redis.call('ZRANGE', key, -1, -1, 'WITHSCORES')
    reset_us = tonumber(newest[2]) + window - now
  end
  local remaining = limit - count[i]
  if remaining < 0 then remaining = 0 end
  out[#out + 1] = limit
  out[#out + 1] = remaining
  out[#out + 1] = us_to_ms(blocked(retry[i]))
  out[#out + 1] = us_to_ms(reset_us)
end
return out
