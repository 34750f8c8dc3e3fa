-- Fixed window, checks of one limit without a block: the common call, in a
-- script of its own without the general script's parts (tables per limit,
-- helper closures), so it costs the Redis thread less. Same layout and the
-- same decisions as ../fixed_window.lua (script_diff_tests and
-- coalesce_tests hold them to it); every other call goes there. The build
-- puts common/prelude.lua (now, the costs, ttl_ms, the reply) in front.
--
-- KEYS[1]  the HASH {w, n}    ARGV[4..5]  limit, window_us
local limit, window = tonumber(ARGV[4]), tonumber(ARGV[5])
local start = math.floor(now / window) * window
if start > now then start = start - window elseif start + window <= now then start = start + window end
local count, stored = 0, false
local st = redis.call('HMGET', KEYS[1], 'w', 'n')
local w, c = tonumber(st[1]), tonumber(st[2])
if w and c then
  if w == start then
    count, stored = c, true
  elseif w > start then  -- the clock stepped back: stay in the stored window
    start, count = w, c
  end
end
local to_end = start + window - now
local to_end_ms = 0
if to_end > 0 then to_end_ms = math.ceil(to_end / 1000) end

-- Each check in turn, in memory; one write for all of them after.
local admitted = false
for j = 1, checks do
  if costs then cost = costs[j] end
  local allowed, retry_ms = 0, to_end_ms
  if count + cost <= limit then allowed, retry_ms, count, admitted = 1, 0, count + cost, true end
  local reset_ms = 0
  if count > 0 then reset_ms = to_end_ms end
  local remaining = limit - count
  if remaining < 0 then remaining = 0 end
  answer(j, allowed, limit, remaining, retry_ms, reset_ms)
end

if admitted then
  -- With the server's clock the write that started this window set the
  -- key's expiry (and w); caller-supplied time moves it, with one window of
  -- slack.
  if stored then
    redis.call('HSET', KEYS[1], 'n', string.format('%d', count))
  else
    redis.call('HSET', KEYS[1], 'w', string.format('%d', start), 'n', string.format('%d', count))
  end
  if not stored or ARGV[3] ~= '' then
    redis.call('PEXPIRE', KEYS[1], ttl_ms(to_end, window))
  end
end
return replies()
