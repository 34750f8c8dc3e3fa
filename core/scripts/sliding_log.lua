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
