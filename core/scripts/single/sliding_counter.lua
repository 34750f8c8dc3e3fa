-- Sliding-window counter, checks of one limit without a block: the common
-- call, in a script of its own without the general script's parts (tables
-- per limit), so it costs the Redis thread less. Same layout and the same
-- decisions as ../sliding_counter.lua (script_diff_tests and coalesce_tests
-- hold them to it); every other call goes there. The build puts
-- common/prelude.lua (now, the costs, ttl_ms, the reply) in front.
--
-- KEYS[1]  the HASH {w, c, p}    ARGV[4..5]  limit, window_us
local limit, window = tonumber(ARGV[4]), tonumber(ARGV[5])
local s = math.floor(now / window) * window
if s > now then s = s - window elseif s + window <= now then s = s + window end
local st = redis.call('HMGET', KEYS[1], 'w', 'c', 'p')
local w, c, p = tonumber(st[1]), tonumber(st[2]) or 0, tonumber(st[3]) or 0
local stored_w = w
if not w then
  c, p = 0, 0
elseif w == s then
  -- same window
elseif w + window == s then
  p, c = c, 0
elseif w > s then  -- the clock stepped back: stay in the stored window
  s = w
else
  c, p = 0, 0
end
local elapsed = now - s
if elapsed < 0 then elapsed = 0 end

-- Admission: p*(window - elapsed) <= (limit - c - cost)*window (see
-- ../sliding_counter.lua, whose fits/first_fit these are).
local function fits(q, a, e)
  return a >= 0 and q * (window - e) <= a * window
end
local function first_fit(q, a, from)
  if a < 0 or from > window - 1 then return nil end
  if fits(q, a, from) then return from end
  if not fits(q, a, window - 1) then return nil end
  local e = window - math.floor(a * window / q)
  if e <= from then e = from + 1 end
  if e > window - 1 then e = window - 1 end
  while e > from + 1 and fits(q, a, e - 1) do e = e - 1 end
  while not fits(q, a, e) do e = e + 1 end
  return e
end

-- Each check in turn, in memory; one write for all of them after.
local weighted = math.ceil(p * (window - elapsed) / window)
local admitted = false
for j = 1, checks do
  if costs then cost = costs[j] end
  local allowed, retry = 1, 0
  local a = limit - c - cost
  if fits(p, a, elapsed) then
    c, admitted = c + cost, true
  else
    allowed = 0
    local e = first_fit(p, a, elapsed + 1)
    if e then
      retry = s + e - now
    else
      -- next window: this window's units become the weighted ones
      e = first_fit(c, limit - cost, 0)
      if e then retry = s + window + e - now else retry = s + 2 * window - now end
    end
  end
  local remaining = limit - c - weighted
  if remaining < 0 then remaining = 0 end
  local reset = 0
  if c > 0 then
    reset = s + 2 * window - now
  elseif weighted > 0 then
    reset = s + window - now
  end
  local retry_ms, reset_ms = 0, 0
  if retry > 0 then retry_ms = math.ceil(retry / 1000) end
  if reset > 0 then reset_ms = math.ceil(reset / 1000) end
  answer(j, allowed, limit, remaining, retry_ms, reset_ms)
end

if admitted then
  redis.call('HSET', KEYS[1], 'w', string.format('%d', s), 'c', string.format('%d', c), 'p', string.format('%d', p))
  -- With the server's clock the write that started the stored window set
  -- the key's expiry; caller-supplied time moves it, with one window of slack.
  if not (ARGV[3] == '' and stored_w == s) then
    redis.call('PEXPIRE', KEYS[1], ttl_ms(s + 2 * window - now, window))
  end
end
return replies()
