-- GCRA, checks of one limit without a block: the common call, in a script
-- of its own without the general script's parts, so it costs the Redis
-- thread less. Same layout and the same decisions as ../gcra.lua
-- (script_diff_tests and coalesce_tests hold them to it); every other call
-- goes there.
--
-- KEYS[1]  the STRING TAT (us)
-- ARGV     'check', cost, now_us or '', window_us, capacity, interval_us; or
--          'checks' and the costs of coalesced checks, comma-separated,
--          decided in order
-- Returns 'allowed capacity remaining retry_after_ms reset_after_ms' per
-- check, all in one string: a reply Redis converts more cheaply than a
-- table.
local now
if ARGV[3] == '' then
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000000 + tonumber(t[2])
else
  now = tonumber(ARGV[3])
end
local checks, cost, costs = 1, tonumber(ARGV[2]), nil
if ARGV[1] == 'checks' then
  costs = {}
  for c in string.gmatch(ARGV[2], '[^,]+') do costs[#costs + 1] = tonumber(c) end
  checks = #costs
end
local window, cap, interval = tonumber(ARGV[4]), tonumber(ARGV[5]), tonumber(ARGV[6])
local tat = now
local v = redis.call('GET', KEYS[1])
if v then
  tat = tonumber(v)
  if tat < now then tat = now end
end
local tau = interval * cap

-- Each check in turn, in memory; one write for all of them after.
local admitted, reply = false, nil
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
  reply = string.format('%d %d %d %d %d', allowed, cap, remaining, retry_ms, reset_ms)
  if costs then costs[j] = reply end
end

if admitted then
  if tat <= now then
    redis.call('DEL', KEYS[1])
  else
    -- Expiry: when the bucket is full again (one window of slack for
    -- caller-supplied time).
    local us = tat - now
    if ARGV[3] ~= '' then us = us + window end
    local ms = 1
    if us > 1000 then ms = math.ceil(us / 1000) end
    redis.call('SET', KEYS[1], string.format('%d', tat), 'PX', string.format('%d', ms))
  end
end
if costs then return table.concat(costs, ' ') end
return reply
