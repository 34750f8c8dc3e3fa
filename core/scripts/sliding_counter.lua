-- Sliding-window counter: the count of the current fixed window plus the
-- previous window's count weighted by the part of it the sliding window still
-- covers. O(1) memory per key; approximate (it assumes the previous window's
-- units were spread evenly). Error bound: in any window of length `window`
-- at most limit + p*f units pass, where p <= limit is the previous window's
-- count and f the elapsed fraction of the current one; so always < 2*limit,
-- and close to `limit` when traffic is even.
--
-- KEYS[i]  a HASH for limit i: w = current window start (us), c = its units,
--          p = units of the window before it
-- ARGV[1..3]  op, cost, now_us, then the limits, then block_us if any: see
--              common/prelude.lua, which the build puts in front of this file
-- ARGV[3+2(i-1)+1..2]   limit i: limit, window_us
-- Returns {allowed, then per limit: limit, remaining, retry_after_ms, reset_after_ms}
-- (per check, one after another, for op 'checks').
--
-- Admission: p*(window - elapsed) <= (limit - c - cost)*window, a comparison
-- of products that the memory backend computes with the same doubles, so
-- both backends agree to the bit.

local function fits(p, a, e, window)
  return a >= 0 and p * (window - e) <= a * window
end

-- Smallest elapsed time e in [from, window-1] at which `fits` holds, or nil.
local function first_fit(p, a, from, window)
  if a < 0 or from > window - 1 then return nil end
  if fits(p, a, from, window) then return from end
  if not fits(p, a, window - 1, window) then return nil end
  local e = window - math.floor(a * window / p)
  if e <= from then e = from + 1 end
  if e > window - 1 then e = window - 1 end
  while e > from + 1 and fits(p, a, e - 1, window) do e = e - 1 end
  while not fits(p, a, e, window) do e = e + 1 end
  return e
end

local start, cur, prev, limit, window, retry, refunded = {}, {}, {}, {}, {}, {}, {}
local stored = {}
limits(2)
for i = 1, n do
  local base = 3 + 2 * (i - 1)
  limit[i] = tonumber(ARGV[base + 1])
  window[i] = tonumber(ARGV[base + 2])
  local st = redis.call('HMGET', KEYS[i], 'w', 'c', 'p')
  stored[i] = st
end
-- Every limit is read; now decide (and refund) in memory, then write.
local refund = op == 'refund'
if refund then op, costs = 'peek', {1} end
local stored_w = {}  -- the window start each key held (its expiry was set with it)
for i = 1, n do stored_w[i] = tonumber(stored[i][1]) end

-- Each check in turn (one, or the coalesced ones). An admission leaves
-- stored[i] as its write would have: what the next check reads.
local out, written = {}, false
for _, each in ipairs(costs) do
  cost = each
  local allowed = 1
  for i = 1, n do
    local s = window_start(now, window[i])
    local st = stored[i]
    local w, c, p = tonumber(st[1]), tonumber(st[2]) or 0, tonumber(st[3]) or 0
    -- Refund: give back up to the refunded units of the current window.
    if refund and w and st[2] and w >= s then
      c = math.max(0, c - tonumber(ARGV[2]))
      refunded[i] = true
    end
    if not w then
      c, p = 0, 0
    elseif w == s then
      -- same window
    elseif w + window[i] == s then
      p, c = c, 0
    elseif w > s then  -- the clock stepped back: stay in the stored window
      s = w
    else
      c, p = 0, 0
    end
    start[i], cur[i], prev[i] = s, c, p
    local elapsed = now - s
    if elapsed < 0 then elapsed = 0 end
    retry[i] = 0
    local a = limit[i] - c - cost
    if not fits(p, a, elapsed, window[i]) then
      allowed = 0
      local e = first_fit(p, a, elapsed + 1, window[i])
      if e then
        retry[i] = s + e - now
      else
        -- next window: this window's units become the weighted ones
        e = first_fit(c, limit[i] - cost, 0, window[i])
        if e then retry[i] = s + window[i] + e - now else retry[i] = s + 2 * window[i] - now end
      end
    end
  end

  allowed = apply_block(allowed)

  if op == 'check' and allowed == 1 then
    written = true
    for i = 1, n do
      cur[i] = cur[i] + cost
      stored[i] = {start[i], cur[i], prev[i]}
    end
  end

  out[#out + 1] = allowed
  for i = 1, n do
    local elapsed = now - start[i]
    if elapsed < 0 then elapsed = 0 end
    local weighted = math.ceil(prev[i] * (window[i] - elapsed) / window[i])
    local remaining = limit[i] - cur[i] - weighted
    if remaining < 0 then remaining = 0 end
    local reset_us = 0
    if cur[i] > 0 then
      reset_us = start[i] + 2 * window[i] - now
    elseif weighted > 0 then
      reset_us = start[i] + window[i] - now
    end
    out[#out + 1] = limit[i]
    out[#out + 1] = remaining
    out[#out + 1] = us_to_ms(blocked(retry[i]))
    out[#out + 1] = us_to_ms(reset_us)
  end
end

-- Writes, after every read and decision: the state the checks leave.
for i = 1, n do
  if written then
    redis.call('HSET', KEYS[i], 'w', string.format('%d', start[i]), 'c', string.format('%d', cur[i]),
               'p', string.format('%d', prev[i]))
    -- With the server's clock the key's expiry is the end of the window
    -- after the stored one, set by the write that started it: set it only
    -- when the stored window changes. (Caller-supplied time moves it with
    -- the caller's clock: set every time.)
    if not (ARGV[3] == '' and stored_w[i] == start[i]) then
      redis.call('PEXPIRE', KEYS[i], ttl_ms(start[i] + 2 * window[i] - now, window[i]))
    end
  elseif refunded[i] then
    redis.call('HSET', KEYS[i], 'c', string.format('%d', cur[i]))
  end
end
return out
