// Generated from core/scripts/*.lua by embed_scripts.cmake. Do not edit.
#include "scripts_generated.h"

namespace polylimit {
namespace scripts {

const Script k_fixed_window = {"fixed_window", R"__lua__(#!lua
-- prelude.lua: the start of every algorithm script. The build puts this text
-- in front of each core/scripts/*.lua file (Redis runs one self-contained
-- text per script; the SHA1 is that of the joined text).
--
-- ARGV[1] op: 'check', 'peek' or 'refund'   ARGV[2] cost
-- ARGV[3] now_us, or '' for the server's TIME
-- ARGV[4..] k values per limit, only those the algorithm reads (its script
--           names them and calls limits(k)); n limits, KEYS[1..n] their state
-- then, only with a punitive block after a denied check: block_us, and
--           KEYS[n+1] holds when the block ends
-- Every argument costs the server a parse and a copy per call, so none is
-- sent that the script does not read.
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

-- A TTL for PEXPIRE / PX, in ms (at least 1), for state that must live `us`
-- more microseconds of the caller's time. With caller-supplied time (client
-- clock, check_at) that timeline may lag the server's clock, which drives
-- expiry: such state lives `slack` (one window) longer, so decisions stay
-- exact while the lag is below one window (docs/limiter.md).
local function ttl_ms(us, slack)
  if ARGV[3] ~= '' then us = us + slack end
  local ms = us_to_ms(us)
  if ms < 1 then ms = 1 end
  return string.format('%d', ms)
end

local n, block_us, blocked_until = 0, 0, 0

-- Reads the layout: n limits of k values each, then block_us if one more
-- argument follows (k >= 2, so one more is never a whole limit).
local function limits(k)
  local extra = (#ARGV - 3) % k
  n = (#ARGV - 3 - extra) / k
  if extra == 1 then
    block_us = tonumber(ARGV[#ARGV])
    if op ~= 'refund' then
      local v = redis.call('GET', KEYS[n + 1])
      if v and tonumber(v) > now then blocked_until = tonumber(v) end
    end
  end
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
    redis.call('SET', KEYS[n + 1], string.format('%d', blocked_until), 'PX', ttl_ms(block_us, block_us))
  end
  return allowed
end

-- Fixed window: a counter per window-aligned interval [k*window, (k+1)*window).
-- O(1) memory; up to 2*limit units can pass around a window edge.
--
-- KEYS[i]  a HASH for limit i: w = start of the counted window (us), n = units
-- ARGV[1..3]  op, cost, now_us, then the limits, then block_us if any: see
--              common/prelude.lua, which the build puts in front of this file
-- ARGV[3+2(i-1)+1..2]   limit i: limit, window_us
-- Returns {allowed, then per limit: limit, remaining, retry_after_ms, reset_after_ms}.
--
-- The window start is stored with the count; PEXPIRE frees the key when its
-- window has ended (one window later for caller-supplied time: see ttl_ms).

limits(2)
local start, count, limit, window, refunded, stored = {}, {}, {}, {}, {}, {}
for i = 1, n do
  local base = 3 + 2 * (i - 1)
  limit[i] = tonumber(ARGV[base + 1])
  window[i] = tonumber(ARGV[base + 2])
  start[i] = window_start(now, window[i])
  count[i] = 0
  local st = redis.call('HMGET', KEYS[i], 'w', 'n')
  local w, c = tonumber(st[1]), tonumber(st[2])
  if w and c then
    if w == start[i] then
      count[i] = c
      stored[i] = true
    elseif w > start[i] then  -- the clock stepped back: stay in the stored window
      start[i] = w
      count[i] = c
    end
    -- Refund: give back up to `cost` units of the current window.
    if op == 'refund' and w >= window_start(now, window[i]) then
      count[i] = math.max(0, count[i] - cost)
      refunded[i] = true
    end
  end
end
if op == 'refund' then op, cost = 'peek', 1 end

local allowed = 1
for i = 1, n do
  if count[i] + cost > limit[i] then allowed = 0 end
end

allowed = apply_block(allowed)

-- Writes come after every read.
for i = 1, n do
  if op == 'check' and allowed == 1 then
    count[i] = count[i] + cost
    redis.call('HSET', KEYS[i], 'w', string.format('%d', start[i]), 'n', string.format('%d', count[i]))
    -- With the server's clock the key's expiry is the window's end, already
    -- set by the write that started this window. (Caller-supplied time
    -- moves it with the caller's clock: set every time, as always.)
    if not (stored[i] and ARGV[3] == '') then
      redis.call('PEXPIRE', KEYS[i], ttl_ms(start[i] + window[i] - now, window[i]))
    end
  elseif refunded[i] then
    redis.call('HSET', KEYS[i], 'n', string.format('%d', count[i]))
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
)__lua__", "ec4b841856d2714f7d08195b70a65a8b7ecf0f51"};
const Script k_gcra = {"gcra", R"__lua__(#!lua
-- prelude.lua: the start of every algorithm script. The build puts this text
-- in front of each core/scripts/*.lua file (Redis runs one self-contained
-- text per script; the SHA1 is that of the joined text).
--
-- ARGV[1] op: 'check', 'peek' or 'refund'   ARGV[2] cost
-- ARGV[3] now_us, or '' for the server's TIME
-- ARGV[4..] k values per limit, only those the algorithm reads (its script
--           names them and calls limits(k)); n limits, KEYS[1..n] their state
-- then, only with a punitive block after a denied check: block_us, and
--           KEYS[n+1] holds when the block ends
-- Every argument costs the server a parse and a copy per call, so none is
-- sent that the script does not read.
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

-- A TTL for PEXPIRE / PX, in ms (at least 1), for state that must live `us`
-- more microseconds of the caller's time. With caller-supplied time (client
-- clock, check_at) that timeline may lag the server's clock, which drives
-- expiry: such state lives `slack` (one window) longer, so decisions stay
-- exact while the lag is below one window (docs/limiter.md).
local function ttl_ms(us, slack)
  if ARGV[3] ~= '' then us = us + slack end
  local ms = us_to_ms(us)
  if ms < 1 then ms = 1 end
  return string.format('%d', ms)
end

local n, block_us, blocked_until = 0, 0, 0

-- Reads the layout: n limits of k values each, then block_us if one more
-- argument follows (k >= 2, so one more is never a whole limit).
local function limits(k)
  local extra = (#ARGV - 3) % k
  n = (#ARGV - 3 - extra) / k
  if extra == 1 then
    block_us = tonumber(ARGV[#ARGV])
    if op ~= 'refund' then
      local v = redis.call('GET', KEYS[n + 1])
      if v and tonumber(v) > now then blocked_until = tonumber(v) end
    end
  end
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
    redis.call('SET', KEYS[n + 1], string.format('%d', blocked_until), 'PX', ttl_ms(block_us, block_us))
  end
  return allowed
end

-- GCRA (generic cell rate algorithm), the token bucket as one timestamp: the
-- theoretical arrival time (TAT) of the next unit. Units are emitted every
-- interval_us = ceil(window/limit); up to `capacity` (the burst) pass at once.
-- O(1) memory per key, smooth: no window edges.
--
-- KEYS[i]  a STRING for limit i: the TAT in microseconds
-- ARGV[1..3]  op, cost, now_us, then the limits, then block_us if any: see
--              common/prelude.lua, which the build puts in front of this file
-- ARGV[3+3(i-1)+1..3]   limit i: window_us, capacity, interval_us
-- Returns {allowed, then per limit: capacity, remaining, retry_after_ms, reset_after_ms}.
-- interval_us * capacity <= 2^50 and now <= 2^52 (checked by the library), so
-- every sum stays below 2^53 and exact.

-- floor(a / b) for integers, exact whatever the rounding of the division.
local function floor_div(a, b)
  local q = math.floor(a / b)
  if q * b > a then q = q - 1 elseif (q + 1) * b <= a then q = q + 1 end
  return q
end

-- Phase 1: read every TAT; nothing is written before all are read.
local cap, interval, window, stored = {}, {}, {}, {}
limits(3)
for i = 1, n do
  local base = 3 + 3 * (i - 1)
  window[i] = tonumber(ARGV[base + 1])
  cap[i] = tonumber(ARGV[base + 2])
  interval[i] = tonumber(ARGV[base + 3])
  local v = redis.call('GET', KEYS[i])
  if v then stored[i] = tonumber(v) end
end

-- Refund: move the TAT back by `cost` emissions (not before now), then peek.
local refunded = false
if op == 'refund' then
  for i = 1, n do
    if stored[i] then stored[i] = stored[i] - interval[i] * cost end
  end
  refunded = true
  op, cost = 'peek', 1
end

local allowed = 1
local tat = {}
for i = 1, n do
  local t = stored[i] or now
  if t < now then t = now end
  tat[i] = t
  if t + interval[i] * cost - now > interval[i] * cap[i] then allowed = 0 end
end

allowed = apply_block(allowed)

-- Phase 2: write.
local function store(i, t)
  if t <= now then
    redis.call('DEL', KEYS[i])
  else
    redis.call('SET', KEYS[i], string.format('%d', t), 'PX', ttl_ms(t - now, window[i]))
  end
end

local out = {allowed}
for i = 1, n do
  local tau = interval[i] * cap[i]
  local t = tat[i]
  local retry_us = 0
  if op == 'check' and allowed == 1 then
    t = t + interval[i] * cost
    store(i, t)
  else
    if refunded and stored[i] then store(i, stored[i]) end
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
)__lua__", "3eb04c24715dbe812fbef302bf08ac6bb2207a02"};
const Script k_sliding_counter = {"sliding_counter", R"__lua__(#!lua
-- prelude.lua: the start of every algorithm script. The build puts this text
-- in front of each core/scripts/*.lua file (Redis runs one self-contained
-- text per script; the SHA1 is that of the joined text).
--
-- ARGV[1] op: 'check', 'peek' or 'refund'   ARGV[2] cost
-- ARGV[3] now_us, or '' for the server's TIME
-- ARGV[4..] k values per limit, only those the algorithm reads (its script
--           names them and calls limits(k)); n limits, KEYS[1..n] their state
-- then, only with a punitive block after a denied check: block_us, and
--           KEYS[n+1] holds when the block ends
-- Every argument costs the server a parse and a copy per call, so none is
-- sent that the script does not read.
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

-- A TTL for PEXPIRE / PX, in ms (at least 1), for state that must live `us`
-- more microseconds of the caller's time. With caller-supplied time (client
-- clock, check_at) that timeline may lag the server's clock, which drives
-- expiry: such state lives `slack` (one window) longer, so decisions stay
-- exact while the lag is below one window (docs/limiter.md).
local function ttl_ms(us, slack)
  if ARGV[3] ~= '' then us = us + slack end
  local ms = us_to_ms(us)
  if ms < 1 then ms = 1 end
  return string.format('%d', ms)
end

local n, block_us, blocked_until = 0, 0, 0

-- Reads the layout: n limits of k values each, then block_us if one more
-- argument follows (k >= 2, so one more is never a whole limit).
local function limits(k)
  local extra = (#ARGV - 3) % k
  n = (#ARGV - 3 - extra) / k
  if extra == 1 then
    block_us = tonumber(ARGV[#ARGV])
    if op ~= 'refund' then
      local v = redis.call('GET', KEYS[n + 1])
      if v and tonumber(v) > now then blocked_until = tonumber(v) end
    end
  end
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
    redis.call('SET', KEYS[n + 1], string.format('%d', blocked_until), 'PX', ttl_ms(block_us, block_us))
  end
  return allowed
end

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
-- Returns {allowed, then per limit: limit, remaining, retry_after_ms, reset_after_ms}.
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
if refund then op, cost = 'peek', 1 end
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

for i = 1, n do
  if op == 'check' and allowed == 1 then
    cur[i] = cur[i] + cost
    redis.call('HSET', KEYS[i], 'w', string.format('%d', start[i]), 'c', string.format('%d', cur[i]),
               'p', string.format('%d', prev[i]))
    -- With the server's clock the key's expiry is the end of the window
    -- after the stored one, set by the write that started it: set it only
    -- when the stored window changes. (Caller-supplied time moves it with
    -- the caller's clock: set every time.)
    if not (ARGV[3] == '' and tonumber(stored[i][1]) == start[i]) then
      redis.call('PEXPIRE', KEYS[i], ttl_ms(start[i] + 2 * window[i] - now, window[i]))
    end
  elseif refunded[i] then
    redis.call('HSET', KEYS[i], 'c', string.format('%d', cur[i]))
  end
end

local out = {allowed}
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
return out
)__lua__", "55441e4f5a31148c32037f7925736ebc50a8d802"};
const Script k_sliding_log = {"sliding_log", R"__lua__(#!lua
-- prelude.lua: the start of every algorithm script. The build puts this text
-- in front of each core/scripts/*.lua file (Redis runs one self-contained
-- text per script; the SHA1 is that of the joined text).
--
-- ARGV[1] op: 'check', 'peek' or 'refund'   ARGV[2] cost
-- ARGV[3] now_us, or '' for the server's TIME
-- ARGV[4..] k values per limit, only those the algorithm reads (its script
--           names them and calls limits(k)); n limits, KEYS[1..n] their state
-- then, only with a punitive block after a denied check: block_us, and
--           KEYS[n+1] holds when the block ends
-- Every argument costs the server a parse and a copy per call, so none is
-- sent that the script does not read.
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

-- A TTL for PEXPIRE / PX, in ms (at least 1), for state that must live `us`
-- more microseconds of the caller's time. With caller-supplied time (client
-- clock, check_at) that timeline may lag the server's clock, which drives
-- expiry: such state lives `slack` (one window) longer, so decisions stay
-- exact while the lag is below one window (docs/limiter.md).
local function ttl_ms(us, slack)
  if ARGV[3] ~= '' then us = us + slack end
  local ms = us_to_ms(us)
  if ms < 1 then ms = 1 end
  return string.format('%d', ms)
end

local n, block_us, blocked_until = 0, 0, 0

-- Reads the layout: n limits of k values each, then block_us if one more
-- argument follows (k >= 2, so one more is never a whole limit).
local function limits(k)
  local extra = (#ARGV - 3) % k
  n = (#ARGV - 3 - extra) / k
  if extra == 1 then
    block_us = tonumber(ARGV[#ARGV])
    if op ~= 'refund' then
      local v = redis.call('GET', KEYS[n + 1])
      if v and tonumber(v) > now then blocked_until = tonumber(v) end
    end
  end
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
    redis.call('SET', KEYS[n + 1], string.format('%d', blocked_until), 'PX', ttl_ms(block_us, block_us))
  end
  return allowed
end

-- Sliding-window log, stored compactly and exactly. Per limit, a STRING holds
-- a ring of the admission times of the last `limit` admitted units:
--
--   bytes 0..11   header, struct '>I4I4I4': head (the slot written next),
--                 used (valid entries: the `used` slots before head), size
--                 (slots: the limit the ring was written for)
--   byte 12 + 8p  slot p: an admission time in microseconds ('>d', exact
--                 below 2^53), oldest first from head - used
--
-- At most `limit` units can be in the window, so a ring of at least `limit`
-- slots holds every unit that still counts, in time order. `cost` more units
-- fit exactly when the (limit - cost + 1)-th newest entry has left the window
-- (or there is none): one read decides, whatever the cost, and admitting
-- writes `cost` slots with one SETRANGE (two when the ring wraps) over slots
-- whose units have left the window. Entries are written at max(now, newest),
-- so a clock that steps back (client clocks) keeps the ring sorted; such
-- units then count a little longer, never shorter. A ring smaller than the
-- limit (the limit grew) is re-read once and rewritten at the new size; a
-- larger one is kept as it is.
--
-- KEYS[i]  the ring of limit i (one key per limit; all share one hash tag)
-- ARGV[1..3]  op, cost, now_us, then the limits, then block_us if any: see
--              common/prelude.lua, which the build puts in front of this file (the token is not used)
-- ARGV[3+2(i-1)+1..2]   limit i: limit, window_us
-- Returns {allowed, then per limit: limit, remaining, retry_after_ms, reset_after_ms}.
-- Every limit must admit or none consumes; everything is read and decided
-- before the first write, so an error leaves every limit untouched.

local HDR, W = 12, 8
local WHOLE = 256     -- limits up to this: the header and slots 0..limit-1 come
                      -- in one GETRANGE (at most 2 KB; beyond, copying the bytes
                      -- costs more than the block reads it saves)
local BLOCK = 32      -- larger rings: slots read per GETRANGE
local PREALLOC = 128  -- rings up to this many slots are written whole at once
                      -- (growing a STRING by SETRANGE over-allocates)

local function not_a_ring(key)
  return 'WRONGTYPE polylimit: ' .. key .. ' holds a value that is not a sliding log ring'
end

-- Phase 1: read. ring[i] describes limit i; nothing is written here.
limits(2)
local ring = {}
for i = 1, n do
  local base = 3 + 2 * (i - 1)
  local r = {key = KEYS[i], limit = tonumber(ARGV[base + 1]), window = tonumber(ARGV[base + 2]), chunks = {}}
  -- r.data holds slots 0..r.reach-1 after the header (as far as written).
  -- Slots are unpacked only when probed: a decision looks at two or three.
  local h
  if r.limit <= WHOLE then
    h = redis.call('GETRANGE', r.key, 0, HDR + W * r.limit - 1)
    r.data, r.reach = h, r.limit
  else
    h = redis.call('GETRANGE', r.key, 0, HDR - 1)
    r.reach = 0
  end
  if h == '' then
    r.head, r.used, r.size, r.fresh = 0, 0, r.limit, true
  else
    if #h >= HDR then r.head, r.used, r.size = struct.unpack('>I4I4I4', h) end
    -- (Slots that turn out to be missing are refused when read: see entry.)
    if #h < HDR or r.size < 1 or r.size > 1000000 or r.head >= r.size or r.used > r.size then
      return redis.error_reply(not_a_ring(r.key))
    end
  end
  if r.size < r.limit then
    -- Written for a smaller limit: re-read every entry; the ring grows to
    -- the limit when it is next written. (A ring larger than the limit stays:
    -- it may hold more units than the new limit, and all still count.)
    local list = {}
    if r.used > 0 then
      local data = redis.call('GETRANGE', r.key, HDR, HDR + W * r.size - 1)
      if #data ~= W * r.size then return redis.error_reply(not_a_ring(r.key)) end
      for t = 1, r.used do
        local p = (r.head - r.used + t - 1) % r.size
        list[#list + 1] = (struct.unpack('>d', data, W * p + 1))
      end
    end
    r.list, r.used, r.head, r.size = list, #list, #list % r.limit, r.limit
  end
  ring[i] = r
end

-- Reads up to BLOCK valid entries from the t-th on (slot p0 on) into
-- r.chunks, as raw strings: {first slot, slots, bytes}. Chunks are keyed by
-- slot (a slot keeps its entry when head and used move).
-- In a full ring the newest entry sits just before the oldest: a read from
-- the oldest on starts one slot earlier and brings the newest along (every
-- decision reads both).
local function load_block(r, t, p0)
  local k = math.min(BLOCK, r.used - t + 1)
  local first = math.min(k, r.size - p0)
  local pre = 0
  if t == 1 and r.used == r.size and p0 > 0 then pre = 1 end
  local a = redis.call('GETRANGE', r.key, HDR + W * (p0 - pre), HDR + W * (p0 + first) - 1)
  local b = ''
  if k > first then b = redis.call('GETRANGE', r.key, HDR, HDR + W * (k - first) - 1) end
  if #a + #b ~= W * (k + pre) then error({err = not_a_ring(r.key)}) end
  r.chunks[#r.chunks + 1] = {p0 - pre, first + pre, a}
  if k > first then r.chunks[#r.chunks + 1] = {0, k - first, b} end
end

-- The t-th valid entry of ring r, oldest first (1 <= t <= r.used).
local function entry(r, t)
  if r.list then return r.list[t] end
  local p = (r.head - r.used + t - 1) % r.size
  if p < r.reach then
    if HDR + W * (p + 1) > #r.data then error({err = not_a_ring(r.key)}) end
    return (struct.unpack('>d', r.data, HDR + W * p + 1))
  end
  for j = 1, 2 do
    for _, c in ipairs(r.chunks) do
      if p >= c[1] and p < c[1] + c[2] then return (struct.unpack('>d', c[3], W * (p - c[1]) + 1)) end
    end
    if j == 1 then load_block(r, t, p) end
  end
end

-- Entries still in the window (time > edge). The ring is sorted and only a
-- few entries leave between two checks, so the search gallops from the
-- oldest end (1, 2, 4, ... entries) and then bisects: one block read in the
-- usual case, O(log n) reads at worst.
local function in_window(r, edge)
  if r.used == 0 or entry(r, 1) > edge then return r.used end
  local lo, hi, step = 1, r.used + 1, 1  -- entry(lo) <= edge; entry(hi) > edge or hi = used + 1
  while lo + step <= r.used do
    if entry(r, lo + step) > edge then
      hi = lo + step
      break
    end
    lo, step = lo + step, step * 2
  end
  lo = lo + 1
  while lo < hi do
    local mid = math.floor((lo + hi) / 2)
    if entry(r, mid) > edge then hi = mid else lo = mid + 1 end
  end
  return r.used - lo + 1
end

-- Forgets the entries that have left the window (as a check or a refund
-- always has): used shrinks, head stays, the slots are reused later.
local function prune(r, live)
  if live < r.used then
    if r.list then
      local keep = {}
      for t = r.used - live + 1, r.used do keep[#keep + 1] = r.list[t] end
      r.list = keep
    end
    r.used, r.dirty = live, true
  end
end

-- Refund: give back up to `cost` of the newest units still in the window,
-- then answer as a peek. The slots stay; head and used move back.
if op == 'refund' then
  for i = 1, n do
    local r = ring[i]
    prune(r, in_window(r, now - r.window))
    local k = math.min(cost, r.used)
    if k > 0 then
      r.used, r.head, r.dirty = r.used - k, (r.head - k) % r.size, true
      if r.list then
        for _ = 1, k do table.remove(r.list) end
        r.head = #r.list % r.size
      end
    end
  end
  op, cost = 'peek', 1
end

local allowed = 1
local count, retry, newest = {}, {}, {}
for i = 1, n do
  local r = ring[i]
  local edge = now - r.window  -- an entry at s counts while now < s + window
  count[i] = in_window(r, edge)
  if op == 'check' then prune(r, count[i]) end
  retry[i] = 0
  if r.used > 0 then newest[i] = entry(r, r.used) end
  -- cost more units fit when at most limit - cost are in the window: when
  -- the (limit - cost + 1)-th newest entry has left it (or does not exist).
  local t = r.used - r.limit + cost
  if t >= 1 then
    local leaving = entry(r, t)
    if leaving > edge then
      allowed = 0
      retry[i] = leaving + r.window - now
    end
  end
end

allowed = apply_block(allowed)

-- Phase 2: write.
local function expire(r, last)
  redis.call('PEXPIRE', r.key, ttl_ms(last + r.window - now, r.window))
end

local function write_whole(r)  -- a ring re-read for another limit
  local data = {struct.pack('>I4I4I4', r.head, r.used, r.size)}
  for t = 1, r.used do data[#data + 1] = struct.pack('>d', r.list[t]) end
  if r.size <= PREALLOC then data[#data + 1] = string.rep('\0', W * (r.size - r.used)) end
  redis.call('SET', r.key, table.concat(data), 'KEEPTTL')
end

local admit = op == 'check' and allowed == 1
for i = 1, n do
  local r = ring[i]
  if admit then
    local t = now
    if newest[i] and newest[i] > t then t = newest[i] end
    local slot = struct.pack('>d', t)
    if r.list then
      for _ = 1, cost do r.list[#r.list + 1] = t end
      while #r.list > r.size do table.remove(r.list, 1) end
      r.used, r.head = #r.list, #r.list % r.size
      write_whole(r)
      expire(r, t)
    elseif r.fresh and r.size <= PREALLOC then  -- a new small ring: written whole, once
      r.head, r.used = cost % r.size, cost
      redis.call('SET', r.key, struct.pack('>I4I4I4', r.head, r.used, r.size) .. string.rep(slot, cost) ..
                 string.rep('\0', W * (r.size - cost)), 'PX', ttl_ms(t + r.window - now, r.window))
    elseif r.size <= PREALLOC and r.reach >= r.size and #r.data == HDR + W * r.size then
      -- The whole ring was read: the same bytes as the SETRANGEs and PEXPIRE
      -- below would leave, in one SET.
      local h0 = r.head
      local first = math.min(cost, r.size - h0)
      local wrapped = cost - first  -- slots 0..wrapped-1 (then h0 + first = size)
      r.head, r.used = (h0 + cost) % r.size, math.min(r.size, r.used + cost)
      redis.call('SET', r.key, struct.pack('>I4I4I4', r.head, r.used, r.size) .. string.rep(slot, wrapped) ..
                 r.data:sub(HDR + W * wrapped + 1, HDR + W * h0) .. string.rep(slot, first) ..
                 r.data:sub(HDR + W * (h0 + first) + 1), 'PX', ttl_ms(t + r.window - now, r.window))
    else
      local first = math.min(cost, r.size - r.head)
      redis.call('SETRANGE', r.key, HDR + W * r.head, string.rep(slot, first))
      if cost > first then redis.call('SETRANGE', r.key, HDR, string.rep(slot, cost - first)) end
      r.head, r.used = (r.head + cost) % r.size, math.min(r.size, r.used + cost)
      redis.call('SETRANGE', r.key, 0, struct.pack('>I4I4I4', r.head, r.used, r.size))
      expire(r, t)
    end
    count[i] = count[i] + cost
    newest[i] = t
  elseif r.dirty then  -- a refund moved head and used back
    if r.list then
      write_whole(r)
    else
      redis.call('SETRANGE', r.key, 0, struct.pack('>I4I4I4', r.head, r.used, r.size))
    end
  end
end

local out = {allowed}
for i = 1, n do
  local r = ring[i]
  local reset_us = 0
  if count[i] > 0 and newest[i] then reset_us = newest[i] + r.window - now end
  local remaining = r.limit - count[i]
  if remaining < 0 then remaining = 0 end
  out[#out + 1] = r.limit
  out[#out + 1] = remaining
  out[#out + 1] = us_to_ms(blocked(retry[i]))
  out[#out + 1] = us_to_ms(reset_us)
end
return out
)__lua__", "dae1d9f33d8ad668e7e3f0dbc971e198c9bf6571"};

}  // namespace scripts
}  // namespace polylimit
