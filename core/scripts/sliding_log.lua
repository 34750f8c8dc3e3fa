-- Sliding-window log: one ZSET member per admitted unit, scored by its
-- admission time in microseconds. Exact: `limit` units in any window.
--
-- KEYS[1]  the log
-- ARGV[1]  'check' (admit cost units, all or nothing) or 'peek' (consume nothing)
-- ARGV[2]  limit        units per window
-- ARGV[3]  window_us    window length in microseconds
-- ARGV[4]  cost         units asked for (1..limit)
-- ARGV[5]  now_us       caller's time, or '' for the server's TIME
-- ARGV[6]  token        unique per call; members are token..':'..i, so two
--                       requests in the same microsecond are two entries
-- Returns {allowed, limit, remaining, retry_after_ms, reset_after_ms}.
--
-- Numbers are formatted with %d before they reach redis.call: Lua 5.1 would
-- print a 16-digit timestamp with %.14g and lose its last digits.
local key = KEYS[1]
local op = ARGV[1]
local limit = tonumber(ARGV[2])
local window = tonumber(ARGV[3])
local cost = tonumber(ARGV[4])
local now
if ARGV[5] == '' then
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000000 + tonumber(t[2])
else
  now = tonumber(ARGV[5])
end

local function us_to_ms(us)
  if us <= 0 then return 0 end
  return math.ceil(us / 1000)
end

-- An entry scored s counts while now < s + window.
local edge = string.format('%d', now - window)
local count
if op == 'peek' then
  count = redis.call('ZCOUNT', key, '(' .. edge, '+inf')
else
  redis.call('ZREMRANGEBYSCORE', key, '-inf', edge)
  count = redis.call('ZCARD', key)
end

local allowed = 0
local retry_us = 0
if op == 'check' and count + cost <= limit then
  local score = string.format('%d', now)
  local token = ARGV[6]
  local args = {}
  for i = 1, cost do
    args[#args + 1] = score
    args[#args + 1] = token .. ':' .. i
    if #args >= 1000 then
      redis.call('ZADD', key, unpack(args))
      args = {}
    end
  end
  if #args > 0 then redis.call('ZADD', key, unpack(args)) end
  redis.call('PEXPIRE', key, string.format('%d', us_to_ms(window)))
  count = count + cost
  allowed = 1
else
  if op == 'peek' and count + cost <= limit then allowed = 1 end
  local need = count + cost - limit  -- entries that must leave the window first
  if need > 0 then
    local e = redis.call('ZRANGEBYSCORE', key, '(' .. edge, '+inf', 'WITHSCORES', 'LIMIT', need - 1, 1)
    retry_us = tonumber(e[2]) + window - now
  end
end

local reset_us = 0
if count > 0 then
  local newest = redis.call('ZRANGE', key, -1, -1, 'WITHSCORES')
  reset_us = tonumber(newest[2]) + window - now
end

local remaining = limit - count
if remaining < 0 then remaining = 0 end
return {allowed, limit, remaining, us_to_ms(retry_us), us_to_ms(reset_us)}
