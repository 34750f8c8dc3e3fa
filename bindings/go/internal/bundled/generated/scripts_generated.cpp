// Generated from core/scripts/*.lua by embed_scripts.cmake. Do not edit.
#include "scripts_generated.h"

namespace polylimit {
namespace scripts {

const Script k_fixed_window = {"fixed_window", R"__lua__(#!lua
-- prelude.lua: the start of every algorithm script. The build puts this text
-- in front of each core/scripts/*.lua file (Redis runs one self-contained
-- text per script; the SHA1 is that of the joined text).
--
-- ARGV[1] op: 'check', 'peek', 'refund' or 'checks'   ARGV[2] cost (costs)
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
-- op 'checks': several checks of the same keys and arguments, coalesced by
-- the client (core/src/coalescer.h); ARGV[2] holds their costs,
-- comma-separated, in arrival order. The script decides them one after
-- another at one `now`, each exactly as a call of its own would decide it,
-- with the state read once and written once, and replies with their
-- replies concatenated. Every other op is one decision: costs = {cost}.
local costs = {cost}
if op == 'checks' then
  op, costs = 'check', {}
  for c in string.gmatch(ARGV[2], '[^,]+') do costs[#costs + 1] = tonumber(c) end
end
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
-- Returns {allowed, then per limit: limit, remaining, retry_after_ms, reset_after_ms}
-- (per check, one after another, for op 'checks').
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
if op == 'refund' then op, costs = 'peek', {1} end

-- Each check in turn (one, or the coalesced ones): a decision in memory.
local out, admitted = {}, false
for _, c in ipairs(costs) do
  cost = c
  local allowed = 1
  for i = 1, n do
    if count[i] + cost > limit[i] then allowed = 0 end
  end
  allowed = apply_block(allowed)
  local admit = op == 'check' and allowed == 1
  if admit then
    admitted = true
    for i = 1, n do count[i] = count[i] + cost end
  end
  out[#out + 1] = allowed
  for i = 1, n do
    local to_end = start[i] + window[i] - now
    local retry_us, reset_us = 0, 0
    if count[i] + cost > limit[i] and not admit then retry_us = to_end end
    if count[i] > 0 then reset_us = to_end end
    local remaining = limit[i] - count[i]
    if remaining < 0 then remaining = 0 end
    out[#out + 1] = limit[i]
    out[#out + 1] = remaining
    out[#out + 1] = us_to_ms(blocked(retry_us))
    out[#out + 1] = us_to_ms(reset_us)
  end
end

-- Writes come after every read and decision: the state the checks leave,
-- as their writes one after another would leave it.
for i = 1, n do
  if admitted then
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
return out
)__lua__", "7d6926c52a611442beab45e02676649a71f01ebd"};
const Script k_gcra = {"gcra", R"__lua__(#!lua
-- prelude.lua: the start of every algorithm script. The build puts this text
-- in front of each core/scripts/*.lua file (Redis runs one self-contained
-- text per script; the SHA1 is that of the joined text).
--
-- ARGV[1] op: 'check', 'peek', 'refund' or 'checks'   ARGV[2] cost (costs)
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
-- op 'checks': several checks of the same keys and arguments, coalesced by
-- the client (core/src/coalescer.h); ARGV[2] holds their costs,
-- comma-separated, in arrival order. The script decides them one after
-- another at one `now`, each exactly as a call of its own would decide it,
-- with the state read once and written once, and replies with their
-- replies concatenated. Every other op is one decision: costs = {cost}.
local costs = {cost}
if op == 'checks' then
  op, costs = 'check', {}
  for c in string.gmatch(ARGV[2], '[^,]+') do costs[#costs + 1] = tonumber(c) end
end
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
-- Returns {allowed, then per limit: capacity, remaining, retry_after_ms, reset_after_ms}
-- (per check, one after another, for op 'checks').
-- interval_us * capacity <= 2^50 and now <= 2^52 (checked by the library), so
-- every sum stays below 2^53 and exact.

-- floor(a / b) for integers, exact whatever the rounding of the division.
local function floor_div(a, b)
  local q = math.floor(a / b)
  if q * b > a then q = q - 1 elseif (q + 1) * b <= a then q = q + 1 end
  return q
end

-- Read every TAT; nothing is written before all are read and decided.
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
  op, costs = 'peek', {1}
end

-- Each check in turn (one, or the coalesced ones), in memory; final[i] is
-- the TAT to write: what an admission (or a refund) left.
local out, final = {}, {}
if refunded then
  for i = 1, n do final[i] = stored[i] end
end
for _, c in ipairs(costs) do
  cost = c
  local allowed = 1
  local tat = {}
  for i = 1, n do
    local t = stored[i] or now
    if t < now then t = now end
    tat[i] = t
    if t + interval[i] * cost - now > interval[i] * cap[i] then allowed = 0 end
  end
  allowed = apply_block(allowed)
  out[#out + 1] = allowed
  for i = 1, n do
    local tau = interval[i] * cap[i]
    local t = tat[i]
    local retry_us = 0
    if op == 'check' and allowed == 1 then
      t = t + interval[i] * cost
      stored[i], final[i] = t, t
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
end

-- Writes, after every read and decision.
for i = 1, n do
  local t = final[i]
  if t then
    if t <= now then
      redis.call('DEL', KEYS[i])
    else
      redis.call('SET', KEYS[i], string.format('%d', t), 'PX', ttl_ms(t - now, window[i]))
    end
  end
end
return out
)__lua__", "2d9eb17f05a8707b05432d849d5f202bcd929aa3"};
const Script k_sliding_counter = {"sliding_counter", R"__lua__(#!lua
-- prelude.lua: the start of every algorithm script. The build puts this text
-- in front of each core/scripts/*.lua file (Redis runs one self-contained
-- text per script; the SHA1 is that of the joined text).
--
-- ARGV[1] op: 'check', 'peek', 'refund' or 'checks'   ARGV[2] cost (costs)
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
-- op 'checks': several checks of the same keys and arguments, coalesced by
-- the client (core/src/coalescer.h); ARGV[2] holds their costs,
-- comma-separated, in arrival order. The script decides them one after
-- another at one `now`, each exactly as a call of its own would decide it,
-- with the state read once and written once, and replies with their
-- replies concatenated. Every other op is one decision: costs = {cost}.
local costs = {cost}
if op == 'checks' then
  op, costs = 'check', {}
  for c in string.gmatch(ARGV[2], '[^,]+') do costs[#costs + 1] = tonumber(c) end
end
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
)__lua__", "23a2a9ed9d327f493164ee3c2128a4b20c2fb67e"};
const Script k_sliding_log = {"sliding_log", R"__lua__(#!lua
-- prelude.lua: the start of every algorithm script. The build puts this text
-- in front of each core/scripts/*.lua file (Redis runs one self-contained
-- text per script; the SHA1 is that of the joined text).
--
-- ARGV[1] op: 'check', 'peek', 'refund' or 'checks'   ARGV[2] cost (costs)
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
-- op 'checks': several checks of the same keys and arguments, coalesced by
-- the client (core/src/coalescer.h); ARGV[2] holds their costs,
-- comma-separated, in arrival order. The script decides them one after
-- another at one `now`, each exactly as a call of its own would decide it,
-- with the state read once and written once, and replies with their
-- replies concatenated. Every other op is one decision: costs = {cost}.
local costs = {cost}
if op == 'checks' then
  op, costs = 'check', {}
  for c in string.gmatch(ARGV[2], '[^,]+') do costs[#costs + 1] = tonumber(c) end
end
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
-- writes `cost` slots over slots whose units have left the window (one
-- SETRANGE, two when the ring wraps, more for runs above 128 slots: fill).
-- Entries are written at max(now, newest), so a clock that steps back
-- (client clocks) keeps the ring sorted; such units then count a little
-- longer, never shorter. A ring smaller than the limit (the limit grew) is
-- re-read once and rewritten at the new size; a larger one is kept as it is.
--
-- KEYS[i]  the ring of limit i (one key per limit; all share one hash tag)
-- ARGV[1..3]  op, cost, now_us, then the limits, then block_us if any: see
--              common/prelude.lua, which the build puts in front of this file (the token is not used)
-- ARGV[3+2(i-1)+1..2]   limit i: limit, window_us
-- Returns {allowed, then per limit: limit, remaining, retry_after_ms, reset_after_ms}
-- (per check, one after another, for op 'checks').
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
      -- (A ring above PREALLOC slots holds only the slots written so far:
      -- each entry must be there, not every slot.)
      local data = redis.call('GETRANGE', r.key, HDR, HDR + W * r.size - 1)
      for t = 1, r.used do
        local p = (r.head - r.used + t - 1) % r.size
        if W * (p + 1) > #data then return redis.error_reply(not_a_ring(r.key)) end
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
  op, cost, costs = 'peek', 1, {1}
end

-- Each check in turn (one, or the coalesced ones), in memory. What the
-- admissions so far would have written is kept aside: extra[i] units at
-- at[i] (one time for all: max(now, the newest entry), and all still in the
-- window), after the ring's entries 1..r.used. (They fit: a check prunes
-- the entries that left the window first, and at most `limit` units, which
-- the ring has room for, are in it.) A grown ring (r.list) takes them in its
-- list.
local extra, at = {}, {}
for i = 1, n do extra[i] = 0 end

local out = {}
for _, c in ipairs(costs) do
  cost = c
  local allowed = 1
  local count, retry, newest = {}, {}, {}
  for i = 1, n do
    local r = ring[i]
    local edge = now - r.window  -- an entry at s counts while now < s + window
    count[i] = in_window(r, edge)
    if op == 'check' then prune(r, count[i]) end
    count[i] = count[i] + extra[i]
    retry[i] = 0
    if extra[i] > 0 then newest[i] = at[i] elseif r.used > 0 then newest[i] = entry(r, r.used) end
    -- cost more units fit when at most limit - cost are in the window: when
    -- the (limit - cost + 1)-th newest entry has left it (or does not exist).
    local t = r.used + extra[i] - r.limit + cost
    if t >= 1 then
      local leaving = at[i]
      if t <= r.used or extra[i] == 0 then leaving = entry(r, t) end
      if leaving > edge then
        allowed = 0
        retry[i] = leaving + r.window - now
      end
    end
  end

  allowed = apply_block(allowed)

  out[#out + 1] = allowed
  for i = 1, n do
    local r = ring[i]
    if op == 'check' and allowed == 1 then
      local t = now
      if newest[i] and newest[i] > t then t = newest[i] end
      if r.list then
        for _ = 1, cost do r.list[#r.list + 1] = t end
        while #r.list > r.size do table.remove(r.list, 1) end
        r.used, r.head = #r.list, #r.list % r.size
      else
        extra[i] = extra[i] + cost
      end
      at[i], r.admitted = t, true
      count[i] = count[i] + cost
      newest[i] = t
    end
    local reset_us = 0
    if count[i] > 0 and newest[i] then reset_us = newest[i] + r.window - now end
    local remaining = r.limit - count[i]
    if remaining < 0 then remaining = 0 end
    out[#out + 1] = r.limit
    out[#out + 1] = remaining
    out[#out + 1] = us_to_ms(blocked(retry[i]))
    out[#out + 1] = us_to_ms(reset_us)
  end
end

-- Phase 2: write.
local function expire(r, last)
  redis.call('PEXPIRE', r.key, ttl_ms(last + r.window - now, r.window))
end

local function write_whole(r)  -- a ring re-read for another limit
  -- Its entries go to slots 0..used-1, so head follows them (a prune that
  -- forgot entries left r.head where it was).
  r.head = r.used % r.size
  local data = {struct.pack('>I4I4I4', r.head, r.used, r.size)}
  for t = 1, r.used do data[#data + 1] = struct.pack('>d', r.list[t]) end
  if r.size <= PREALLOC then data[#data + 1] = string.rep('\0', W * (r.size - r.used)) end
  redis.call('SET', r.key, table.concat(data), 'KEEPTTL')
end

-- Writes n copies of `slot` into slots p..p+n-1 of ring `key`, as
-- single/sliding_log.lua does: a long run as pieces of PIECE slots (making a
-- Lua string costs the server per byte, a SETRANGE about as much as 1 KB of
-- that), the farthest first.
local PIECE = 128
local function fill(key, p, n, slot)
  if n <= PIECE then
    redis.call('SETRANGE', key, HDR + W * p, string.rep(slot, n))
    return
  end
  local piece = string.rep(slot, PIECE)
  redis.call('SETRANGE', key, HDR + W * (p + n - PIECE), piece)
  for q = p, p + n - PIECE - 1, PIECE do redis.call('SETRANGE', key, HDR + W * q, piece) end
end

-- The admissions of this call, written as one (they share one time).
for i = 1, n do
  local r = ring[i]
  local cost, t = extra[i], at[i]
  if r.list and r.admitted then
    write_whole(r)
    expire(r, t)
  elseif cost > 0 then
    local slot = struct.pack('>d', t)
    if r.fresh and (r.size <= PREALLOC or cost <= PIECE) then  -- a new ring, in one SET (as single/sliding_log.lua)
      r.head, r.used = cost % r.size, cost
      local free = ''
      if r.size <= PREALLOC then free = string.rep('\0', W * (r.size - cost)) end
      redis.call('SET', r.key, struct.pack('>I4I4I4', r.head, r.used, r.size) .. string.rep(slot, cost) .. free,
                 'PX', ttl_ms(t + r.window - now, r.window))
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
      fill(r.key, r.head, first, slot)
      if cost > first then fill(r.key, 0, cost - first, slot) end
      r.head, r.used = (r.head + cost) % r.size, math.min(r.size, r.used + cost)
      redis.call('SETRANGE', r.key, 0, struct.pack('>I4I4I4', r.head, r.used, r.size))
      expire(r, t)
    end
  elseif r.dirty then  -- a refund or a check moved head and used back
    if r.list then
      write_whole(r)
    else
      redis.call('SETRANGE', r.key, 0, struct.pack('>I4I4I4', r.head, r.used, r.size))
    end
  end
end
return out
)__lua__", "77e418cff4cd295f2c6ed0e6f6674010c59ac86f"};
const Script k_fixed_window_keys = {"fixed_window", R"__lua__(#!lua
-- prelude.lua of the single-check scripts: the build puts this text in front
-- of each core/scripts/single/*.lua file (as common/prelude.lua for the
-- general scripts). Plain statements and one small function: whatever runs
-- here, every call pays.
--
-- ARGV[1] 'check', or 'checks' for coalesced checks (core/src/coalescer.h)
-- ARGV[2] the cost; for 'checks' the costs, comma-separated, decided in order
-- ARGV[3] now_us, or '' for the server's TIME
-- ARGV[4..] the limit's values (the script names them)
-- A script replies 'allowed limit remaining retry_after_ms reset_after_ms'
-- per check, all in one string (cheaper for Redis to convert than a table).
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

-- A TTL for PEXPIRE / PX in ms (at least 1) for state that must live `us`
-- more microseconds; caller-supplied time adds `slack` (one window), as
-- ttl_ms in common/prelude.lua.
local function ttl_ms(us, slack)
  if ARGV[3] ~= '' then us = us + slack end
  local ms = 1
  if us > 1000 then ms = math.ceil(us / 1000) end
  return string.format('%d', ms)
end

-- The replies: answer(j, ...) keeps check j's (in `costs`, whose cost it has
-- read), replies() returns them all as the script's reply.
local reply
local function answer(j, allowed, limit, remaining, retry_ms, reset_ms)
  reply = string.format('%d %d %d %d %d', allowed, limit, remaining, retry_ms, reset_ms)
  if costs then costs[j] = reply end
end
local function replies()
  if costs then return table.concat(costs, ' ') end
  return reply
end

local function decide(KEYS)
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

end
-- keys.lua: the end of a keys call's script. The build makes one per
-- single-check script: this prelude, then that script's text as the body of
-- `decide(KEYS)`, then this file. A keys call decides checks of one limit
-- on DIFFERENT keys (or one key repeated) in one script call, each exactly
-- as its own call would (the same body, one key at a time, in order), so
-- that a batch of keys pays the server's per-call work once
-- (core/src/redis_backend.cpp: check_many, and the lanes).
--
-- ARGV[1] 'keys'   ARGV[2] one cost per key, comma-separated   KEYS[i] check i's key
-- The reply: each key's reply in order, joined by spaces. A key whose body
-- fails (raises an error, or returns an error reply: a key of another type,
-- found before any write, as every body reads first, so the key is left as
-- it was) answers FAILED instead, and the caller sends that check again on
-- its own, where the error is its own.
local FAILED = '-1 -1 -1 -1 -1'  -- allowed, then one limit's four numbers
local out, i = {}, 0
for c in string.gmatch(ARGV[2], '[^,]+') do
  i = i + 1
  cost = tonumber(c)
  local ok, r = pcall(decide, {KEYS[i]})
  if ok and type(r) == 'string' then out[i] = r else out[i] = FAILED end
end
return table.concat(out, ' ')
)__lua__", "47bbcb6de8f082f114f657b976c49c6d0ad485e1"};
const Script k_fixed_window_single = {"fixed_window", R"__lua__(#!lua
-- prelude.lua of the single-check scripts: the build puts this text in front
-- of each core/scripts/single/*.lua file (as common/prelude.lua for the
-- general scripts). Plain statements and one small function: whatever runs
-- here, every call pays.
--
-- ARGV[1] 'check', or 'checks' for coalesced checks (core/src/coalescer.h)
-- ARGV[2] the cost; for 'checks' the costs, comma-separated, decided in order
-- ARGV[3] now_us, or '' for the server's TIME
-- ARGV[4..] the limit's values (the script names them)
-- A script replies 'allowed limit remaining retry_after_ms reset_after_ms'
-- per check, all in one string (cheaper for Redis to convert than a table).
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

-- A TTL for PEXPIRE / PX in ms (at least 1) for state that must live `us`
-- more microseconds; caller-supplied time adds `slack` (one window), as
-- ttl_ms in common/prelude.lua.
local function ttl_ms(us, slack)
  if ARGV[3] ~= '' then us = us + slack end
  local ms = 1
  if us > 1000 then ms = math.ceil(us / 1000) end
  return string.format('%d', ms)
end

-- The replies: answer(j, ...) keeps check j's (in `costs`, whose cost it has
-- read), replies() returns them all as the script's reply.
local reply
local function answer(j, allowed, limit, remaining, retry_ms, reset_ms)
  reply = string.format('%d %d %d %d %d', allowed, limit, remaining, retry_ms, reset_ms)
  if costs then costs[j] = reply end
end
local function replies()
  if costs then return table.concat(costs, ' ') end
  return reply
end

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
)__lua__", "b5c4522a428126f8b9834b856c83dab6f9d44371"};
const Script k_gcra_keys = {"gcra", R"__lua__(#!lua
-- prelude.lua of the single-check scripts: the build puts this text in front
-- of each core/scripts/single/*.lua file (as common/prelude.lua for the
-- general scripts). Plain statements and one small function: whatever runs
-- here, every call pays.
--
-- ARGV[1] 'check', or 'checks' for coalesced checks (core/src/coalescer.h)
-- ARGV[2] the cost; for 'checks' the costs, comma-separated, decided in order
-- ARGV[3] now_us, or '' for the server's TIME
-- ARGV[4..] the limit's values (the script names them)
-- A script replies 'allowed limit remaining retry_after_ms reset_after_ms'
-- per check, all in one string (cheaper for Redis to convert than a table).
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

-- A TTL for PEXPIRE / PX in ms (at least 1) for state that must live `us`
-- more microseconds; caller-supplied time adds `slack` (one window), as
-- ttl_ms in common/prelude.lua.
local function ttl_ms(us, slack)
  if ARGV[3] ~= '' then us = us + slack end
  local ms = 1
  if us > 1000 then ms = math.ceil(us / 1000) end
  return string.format('%d', ms)
end

-- The replies: answer(j, ...) keeps check j's (in `costs`, whose cost it has
-- read), replies() returns them all as the script's reply.
local reply
local function answer(j, allowed, limit, remaining, retry_ms, reset_ms)
  reply = string.format('%d %d %d %d %d', allowed, limit, remaining, retry_ms, reset_ms)
  if costs then costs[j] = reply end
end
local function replies()
  if costs then return table.concat(costs, ' ') end
  return reply
end

local function decide(KEYS)
-- GCRA, checks of one limit without a block: the common call, in a script
-- of its own without the general script's parts (tables per limit, helper
-- closures), so it costs the Redis thread less. Same layout and the same
-- decisions as ../gcra.lua (script_diff_tests and coalesce_tests hold them
-- to it); every other call goes there. The build puts common/prelude.lua
-- (now, the costs, ttl_ms, the reply) in front.
--
-- KEYS[1]  the STRING TAT (us)    ARGV[4..6]  window_us, capacity, interval_us
-- (the reply's limit is the capacity)
local window, cap, interval = tonumber(ARGV[4]), tonumber(ARGV[5]), tonumber(ARGV[6])
local tat = now
local v = redis.call('GET', KEYS[1])
if v then
  tat = tonumber(v)
  if tat < now then tat = now end
end
local tau = interval * cap

-- Each check in turn, in memory; one write for all of them after.
local admitted = false
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
  answer(j, allowed, cap, remaining, retry_ms, reset_ms)
end

if admitted then
  if tat <= now then
    redis.call('DEL', KEYS[1])
  else
    -- Expiry: when the bucket is full again (one window of slack for
    -- caller-supplied time).
    redis.call('SET', KEYS[1], string.format('%d', tat), 'PX', ttl_ms(tat - now, window))
  end
end
return replies()

end
-- keys.lua: the end of a keys call's script. The build makes one per
-- single-check script: this prelude, then that script's text as the body of
-- `decide(KEYS)`, then this file. A keys call decides checks of one limit
-- on DIFFERENT keys (or one key repeated) in one script call, each exactly
-- as its own call would (the same body, one key at a time, in order), so
-- that a batch of keys pays the server's per-call work once
-- (core/src/redis_backend.cpp: check_many, and the lanes).
--
-- ARGV[1] 'keys'   ARGV[2] one cost per key, comma-separated   KEYS[i] check i's key
-- The reply: each key's reply in order, joined by spaces. A key whose body
-- fails (raises an error, or returns an error reply: a key of another type,
-- found before any write, as every body reads first, so the key is left as
-- it was) answers FAILED instead, and the caller sends that check again on
-- its own, where the error is its own.
local FAILED = '-1 -1 -1 -1 -1'  -- allowed, then one limit's four numbers
local out, i = {}, 0
for c in string.gmatch(ARGV[2], '[^,]+') do
  i = i + 1
  cost = tonumber(c)
  local ok, r = pcall(decide, {KEYS[i]})
  if ok and type(r) == 'string' then out[i] = r else out[i] = FAILED end
end
return table.concat(out, ' ')
)__lua__", "d7637cc583bb2d12ae9a284abf1180eda0ab0637"};
const Script k_gcra_single = {"gcra", R"__lua__(#!lua
-- prelude.lua of the single-check scripts: the build puts this text in front
-- of each core/scripts/single/*.lua file (as common/prelude.lua for the
-- general scripts). Plain statements and one small function: whatever runs
-- here, every call pays.
--
-- ARGV[1] 'check', or 'checks' for coalesced checks (core/src/coalescer.h)
-- ARGV[2] the cost; for 'checks' the costs, comma-separated, decided in order
-- ARGV[3] now_us, or '' for the server's TIME
-- ARGV[4..] the limit's values (the script names them)
-- A script replies 'allowed limit remaining retry_after_ms reset_after_ms'
-- per check, all in one string (cheaper for Redis to convert than a table).
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

-- A TTL for PEXPIRE / PX in ms (at least 1) for state that must live `us`
-- more microseconds; caller-supplied time adds `slack` (one window), as
-- ttl_ms in common/prelude.lua.
local function ttl_ms(us, slack)
  if ARGV[3] ~= '' then us = us + slack end
  local ms = 1
  if us > 1000 then ms = math.ceil(us / 1000) end
  return string.format('%d', ms)
end

-- The replies: answer(j, ...) keeps check j's (in `costs`, whose cost it has
-- read), replies() returns them all as the script's reply.
local reply
local function answer(j, allowed, limit, remaining, retry_ms, reset_ms)
  reply = string.format('%d %d %d %d %d', allowed, limit, remaining, retry_ms, reset_ms)
  if costs then costs[j] = reply end
end
local function replies()
  if costs then return table.concat(costs, ' ') end
  return reply
end

-- GCRA, checks of one limit without a block: the common call, in a script
-- of its own without the general script's parts (tables per limit, helper
-- closures), so it costs the Redis thread less. Same layout and the same
-- decisions as ../gcra.lua (script_diff_tests and coalesce_tests hold them
-- to it); every other call goes there. The build puts common/prelude.lua
-- (now, the costs, ttl_ms, the reply) in front.
--
-- KEYS[1]  the STRING TAT (us)    ARGV[4..6]  window_us, capacity, interval_us
-- (the reply's limit is the capacity)
local window, cap, interval = tonumber(ARGV[4]), tonumber(ARGV[5]), tonumber(ARGV[6])
local tat = now
local v = redis.call('GET', KEYS[1])
if v then
  tat = tonumber(v)
  if tat < now then tat = now end
end
local tau = interval * cap

-- Each check in turn, in memory; one write for all of them after.
local admitted = false
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
  answer(j, allowed, cap, remaining, retry_ms, reset_ms)
end

if admitted then
  if tat <= now then
    redis.call('DEL', KEYS[1])
  else
    -- Expiry: when the bucket is full again (one window of slack for
    -- caller-supplied time).
    redis.call('SET', KEYS[1], string.format('%d', tat), 'PX', ttl_ms(tat - now, window))
  end
end
return replies()
)__lua__", "17d8dde561c6384bcf0e1c1b056dc677acfa0462"};
const Script k_sliding_counter_keys = {"sliding_counter", R"__lua__(#!lua
-- prelude.lua of the single-check scripts: the build puts this text in front
-- of each core/scripts/single/*.lua file (as common/prelude.lua for the
-- general scripts). Plain statements and one small function: whatever runs
-- here, every call pays.
--
-- ARGV[1] 'check', or 'checks' for coalesced checks (core/src/coalescer.h)
-- ARGV[2] the cost; for 'checks' the costs, comma-separated, decided in order
-- ARGV[3] now_us, or '' for the server's TIME
-- ARGV[4..] the limit's values (the script names them)
-- A script replies 'allowed limit remaining retry_after_ms reset_after_ms'
-- per check, all in one string (cheaper for Redis to convert than a table).
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

-- A TTL for PEXPIRE / PX in ms (at least 1) for state that must live `us`
-- more microseconds; caller-supplied time adds `slack` (one window), as
-- ttl_ms in common/prelude.lua.
local function ttl_ms(us, slack)
  if ARGV[3] ~= '' then us = us + slack end
  local ms = 1
  if us > 1000 then ms = math.ceil(us / 1000) end
  return string.format('%d', ms)
end

-- The replies: answer(j, ...) keeps check j's (in `costs`, whose cost it has
-- read), replies() returns them all as the script's reply.
local reply
local function answer(j, allowed, limit, remaining, retry_ms, reset_ms)
  reply = string.format('%d %d %d %d %d', allowed, limit, remaining, retry_ms, reset_ms)
  if costs then costs[j] = reply end
end
local function replies()
  if costs then return table.concat(costs, ' ') end
  return reply
end

local function decide(KEYS)
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

end
-- keys.lua: the end of a keys call's script. The build makes one per
-- single-check script: this prelude, then that script's text as the body of
-- `decide(KEYS)`, then this file. A keys call decides checks of one limit
-- on DIFFERENT keys (or one key repeated) in one script call, each exactly
-- as its own call would (the same body, one key at a time, in order), so
-- that a batch of keys pays the server's per-call work once
-- (core/src/redis_backend.cpp: check_many, and the lanes).
--
-- ARGV[1] 'keys'   ARGV[2] one cost per key, comma-separated   KEYS[i] check i's key
-- The reply: each key's reply in order, joined by spaces. A key whose body
-- fails (raises an error, or returns an error reply: a key of another type,
-- found before any write, as every body reads first, so the key is left as
-- it was) answers FAILED instead, and the caller sends that check again on
-- its own, where the error is its own.
local FAILED = '-1 -1 -1 -1 -1'  -- allowed, then one limit's four numbers
local out, i = {}, 0
for c in string.gmatch(ARGV[2], '[^,]+') do
  i = i + 1
  cost = tonumber(c)
  local ok, r = pcall(decide, {KEYS[i]})
  if ok and type(r) == 'string' then out[i] = r else out[i] = FAILED end
end
return table.concat(out, ' ')
)__lua__", "5098c9b37d3bdfb3523002548922c00f0ef72eb8"};
const Script k_sliding_counter_single = {"sliding_counter", R"__lua__(#!lua
-- prelude.lua of the single-check scripts: the build puts this text in front
-- of each core/scripts/single/*.lua file (as common/prelude.lua for the
-- general scripts). Plain statements and one small function: whatever runs
-- here, every call pays.
--
-- ARGV[1] 'check', or 'checks' for coalesced checks (core/src/coalescer.h)
-- ARGV[2] the cost; for 'checks' the costs, comma-separated, decided in order
-- ARGV[3] now_us, or '' for the server's TIME
-- ARGV[4..] the limit's values (the script names them)
-- A script replies 'allowed limit remaining retry_after_ms reset_after_ms'
-- per check, all in one string (cheaper for Redis to convert than a table).
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

-- A TTL for PEXPIRE / PX in ms (at least 1) for state that must live `us`
-- more microseconds; caller-supplied time adds `slack` (one window), as
-- ttl_ms in common/prelude.lua.
local function ttl_ms(us, slack)
  if ARGV[3] ~= '' then us = us + slack end
  local ms = 1
  if us > 1000 then ms = math.ceil(us / 1000) end
  return string.format('%d', ms)
end

-- The replies: answer(j, ...) keeps check j's (in `costs`, whose cost it has
-- read), replies() returns them all as the script's reply.
local reply
local function answer(j, allowed, limit, remaining, retry_ms, reset_ms)
  reply = string.format('%d %d %d %d %d', allowed, limit, remaining, retry_ms, reset_ms)
  if costs then costs[j] = reply end
end
local function replies()
  if costs then return table.concat(costs, ' ') end
  return reply
end

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
)__lua__", "709683f55aa24e8e54c20f4b46c4994b4ece9002"};
const Script k_sliding_log_keys = {"sliding_log", R"__lua__(#!lua
-- prelude.lua of the single-check scripts: the build puts this text in front
-- of each core/scripts/single/*.lua file (as common/prelude.lua for the
-- general scripts). Plain statements and one small function: whatever runs
-- here, every call pays.
--
-- ARGV[1] 'check', or 'checks' for coalesced checks (core/src/coalescer.h)
-- ARGV[2] the cost; for 'checks' the costs, comma-separated, decided in order
-- ARGV[3] now_us, or '' for the server's TIME
-- ARGV[4..] the limit's values (the script names them)
-- A script replies 'allowed limit remaining retry_after_ms reset_after_ms'
-- per check, all in one string (cheaper for Redis to convert than a table).
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

-- A TTL for PEXPIRE / PX in ms (at least 1) for state that must live `us`
-- more microseconds; caller-supplied time adds `slack` (one window), as
-- ttl_ms in common/prelude.lua.
local function ttl_ms(us, slack)
  if ARGV[3] ~= '' then us = us + slack end
  local ms = 1
  if us > 1000 then ms = math.ceil(us / 1000) end
  return string.format('%d', ms)
end

-- The replies: answer(j, ...) keeps check j's (in `costs`, whose cost it has
-- read), replies() returns them all as the script's reply.
local reply
local function answer(j, allowed, limit, remaining, retry_ms, reset_ms)
  reply = string.format('%d %d %d %d %d', allowed, limit, remaining, retry_ms, reset_ms)
  if costs then costs[j] = reply end
end
local function replies()
  if costs then return table.concat(costs, ' ') end
  return reply
end

local function decide(KEYS)
-- Sliding-window log, checks of one limit (the library sends several
-- limits, blocks, peeks and refunds to ../sliding_log.lua): the common
-- call, in a script of its own without the general script's parts (tables
-- per limit, the general prelude's helpers), so it costs the Redis thread
-- less. Same ring layout and the same decisions as ../sliding_log.lua,
-- whose header describes the ring (script_diff_tests and coalesce_tests
-- hold them to it). The build puts common/prelude.lua
-- (now, the costs, ttl_ms, the reply) in front.
--
-- KEYS[1]  the ring    ARGV[4..5]  limit, window_us
local key, limit, window = KEYS[1], tonumber(ARGV[4]), tonumber(ARGV[5])
local HDR, W, PREALLOC = 12, 8, 128
local WHOLE, BLOCK = 256, 32  -- as in ../sliding_log.lua

local function not_a_ring()
  return redis.error_reply('WRONGTYPE polylimit: ' .. key .. ' holds a value that is not a sliding log ring')
end

-- Up to WHOLE slots: the header and slots 0..limit-1 in one read (at most
-- 2 KB). Larger rings: the header, then the slots a decision probes, in
-- blocks of BLOCK slots (copying a whole large ring into Lua costs more
-- than the reads it saves).
local whole = limit <= WHOLE
local data
if whole then
  data = redis.call('GETRANGE', key, 0, HDR + W * limit - 1)
else
  data = redis.call('GETRANGE', key, 0, HDR - 1)
end
local head, used, size, fresh = 0, 0, limit, false
if data == '' then
  fresh = true
else
  if #data >= HDR then head, used, size = struct.unpack('>I4I4I4', data) end
  if #data < HDR or size < 1 or size > 1000000 or head >= size or used > size then return not_a_ring() end
  if whole and size > limit then
    -- Written for a larger limit (kept as it is): the rest of its slots.
    data = data .. redis.call('GETRANGE', key, HDR + W * limit, HDR + W * size - 1)
  elseif not whole and size < limit then
    -- Re-read whole below, as a list.
    data = data .. redis.call('GETRANGE', key, HDR, HDR + W * size - 1)
    whole = true
  end
end
-- Entry t (1..used), oldest first: slot (head - used + t - 1) % size. A
-- large ring's blocks are aligned (slots BLOCK*b ..), so in a full ring the
-- newest and the oldest entry, next to each other, usually share one.
-- (A ring above PREALLOC slots holds only the slots written so far: each
-- entry must be there, not every slot.)
local blocks  -- block number -> its bytes (a large ring only)
if not whole then blocks = {} end
local function entry(t)
  local p = (head - used + t - 1) % size
  local bytes, at = data, HDR + W * p
  if not whole then
    local b = math.floor(p / BLOCK)
    bytes = blocks[b]
    if not bytes then
      bytes = redis.call('GETRANGE', key, HDR + W * BLOCK * b, HDR + W * BLOCK * (b + 1) - 1)
      blocks[b] = bytes
    end
    at = W * (p - BLOCK * b)
  end
  if at + W > #bytes then error({err = 'WRONGTYPE polylimit: ' .. key .. ' holds a value that is not a sliding log ring'}) end
  return (struct.unpack('>d', bytes, at + 1))
end

-- A ring written for a smaller limit: its entries as a list; it is written
-- again whole at the limit's size (as ../sliding_log.lua does).
local list
if size < limit then
  list = {}
  for t = 1, used do list[t] = entry(t) end
  head, size = used % limit, limit
end

-- Entries still in the window (time > edge): the ring is sorted. While the
-- oldest is still in (a busy key's usual state), so are all: no search.
-- Else only a few entries have left since the last check, as a rule: the
-- search gallops from the oldest (1, 2, 4, ... entries on), then bisects.
local edge = now - window
local lo, hi = 1, used + 1  -- the first entry > edge lies in lo..hi
if used > 0 then
  local oldest
  if list then oldest = list[1] else oldest = entry(1) end
  if oldest > edge then
    hi = 1
  else
    local step = 1  -- entry(lo) <= edge
    while lo + step <= used do
      local e
      if list then e = list[lo + step] else e = entry(lo + step) end
      if e > edge then
        hi = lo + step
        break
      end
      lo, step = lo + step, step * 2
    end
    lo = lo + 1
  end
end
while lo < hi do
  local mid = math.floor((lo + hi) / 2)
  local e
  if list then e = list[mid] else e = entry(mid) end
  if e > edge then hi = mid else lo = mid + 1 end
end
local count = used - lo + 1
local dirty = false
if count < used then  -- forget what left the window: used shrinks, head stays
  if list then
    local keep = {}
    for t = used - count + 1, used do keep[#keep + 1] = list[t] end
    list = keep
  end
  used, dirty = count, true
end
local newest
if used > 0 then
  if list then newest = list[used] else newest = entry(used) end
end

-- Each check in turn, in memory. The admissions so far are kept aside:
-- `extra` units at `at` (one time for all: max(now, the newest entry)),
-- after the ring's `used` entries; one write for all of them after. cost
-- more units fit when the (limit - cost + 1)-th newest entry has left the
-- window (or does not exist).
local extra, at = 0, nil
for j = 1, checks do
  if costs then cost = costs[j] end
  local allowed, retry = 1, 0
  local t = used + extra - limit + cost
  if t >= 1 then
    local leaving = at
    if t <= used or extra == 0 then
      if list then leaving = list[t] else leaving = entry(t) end
    end
    if leaving > edge then allowed, retry = 0, leaving + window - now end
  end
  if allowed == 1 then
    if not at then
      at = now
      if newest and newest > at then at = newest end
    end
    extra, newest = extra + cost, at
  end
  local reset = 0
  if count + extra > 0 and newest then reset = newest + window - now end
  local remaining = limit - count - extra
  if remaining < 0 then remaining = 0 end
  local retry_ms, reset_ms = 0, 0
  if retry > 0 then retry_ms = math.ceil(retry / 1000) end
  if reset > 0 then reset_ms = math.ceil(reset / 1000) end
  answer(j, allowed, limit, remaining, retry_ms, reset_ms)
end

-- Writes n copies of `slot` into slots p..p+n-1. Making a Lua string costs
-- the server per byte, a SETRANGE call about as much as 1 KB of that: so a
-- long run goes as pieces of PIECE slots (one string, set several times; the
-- last piece overlaps the one before it with the same bytes), the farthest
-- first, so that a new STRING is allocated at its full length once.
local PIECE = 128
local function fill(p, n, slot)
  if n <= PIECE then
    redis.call('SETRANGE', key, HDR + W * p, string.rep(slot, n))
    return
  end
  local piece = string.rep(slot, PIECE)
  redis.call('SETRANGE', key, HDR + W * (p + n - PIECE), piece)
  for q = p, p + n - PIECE - 1, PIECE do redis.call('SETRANGE', key, HDR + W * q, piece) end
end

if extra > 0 then
  local cost = extra
  local slot = struct.pack('>d', at)
  if list then
    for _ = 1, cost do list[#list + 1] = at end
    while #list > size do table.remove(list, 1) end
    used, head = #list, #list % size
    local out = {struct.pack('>I4I4I4', head, used, size)}
    for i = 1, used do out[#out + 1] = struct.pack('>d', list[i]) end
    if size <= PREALLOC then out[#out + 1] = string.rep('\0', W * (size - used)) end
    redis.call('SET', key, table.concat(out), 'KEEPTTL')
    redis.call('PEXPIRE', key, ttl_ms(at + window - now, window))
  elseif fresh and (size <= PREALLOC or cost <= PIECE) then
    -- A new ring in one SET with its expiry: a small one whole, a larger one
    -- up to its last entry, as fill() and the header's SETRANGE would leave
    -- it (three calls). More than a piece of slots goes through fill(): one
    -- long Lua string costs more than its pieces' SETRANGEs.
    head, used = cost % size, cost
    local free = ''
    if size <= PREALLOC then free = string.rep('\0', W * (size - cost)) end
    redis.call('SET', key, struct.pack('>I4I4I4', head, used, size) .. string.rep(slot, cost) .. free,
               'PX', ttl_ms(at + window - now, window))
  elseif size <= PREALLOC and size <= limit and #data == HDR + W * size then
    -- The whole ring was read: the bytes the SETRANGEs below would leave, in one SET.
    local h0 = head
    local first = math.min(cost, size - h0)
    local wrapped = cost - first
    head, used = (h0 + cost) % size, math.min(size, used + cost)
    redis.call('SET', key, struct.pack('>I4I4I4', head, used, size) .. string.rep(slot, wrapped) ..
               data:sub(HDR + W * wrapped + 1, HDR + W * h0) .. string.rep(slot, first) ..
               data:sub(HDR + W * (h0 + first) + 1), 'PX', ttl_ms(at + window - now, window))
  else
    local first = math.min(cost, size - head)
    fill(head, first, slot)
    if cost > first then fill(0, cost - first, slot) end
    head, used = (head + cost) % size, math.min(size, used + cost)
    redis.call('SETRANGE', key, 0, struct.pack('>I4I4I4', head, used, size))
    redis.call('PEXPIRE', key, ttl_ms(at + window - now, window))
  end
elseif dirty then  -- the check forgot entries that left the window
  if list then
    head = used % size  -- the entries go to slots 0..used-1
    local out = {struct.pack('>I4I4I4', head, used, size)}
    for i = 1, used do out[#out + 1] = struct.pack('>d', list[i]) end
    if size <= PREALLOC then out[#out + 1] = string.rep('\0', W * (size - used)) end
    redis.call('SET', key, table.concat(out), 'KEEPTTL')
  else
    redis.call('SETRANGE', key, 0, struct.pack('>I4I4I4', head, used, size))
  end
end

return replies()

end
-- keys.lua: the end of a keys call's script. The build makes one per
-- single-check script: this prelude, then that script's text as the body of
-- `decide(KEYS)`, then this file. A keys call decides checks of one limit
-- on DIFFERENT keys (or one key repeated) in one script call, each exactly
-- as its own call would (the same body, one key at a time, in order), so
-- that a batch of keys pays the server's per-call work once
-- (core/src/redis_backend.cpp: check_many, and the lanes).
--
-- ARGV[1] 'keys'   ARGV[2] one cost per key, comma-separated   KEYS[i] check i's key
-- The reply: each key's reply in order, joined by spaces. A key whose body
-- fails (raises an error, or returns an error reply: a key of another type,
-- found before any write, as every body reads first, so the key is left as
-- it was) answers FAILED instead, and the caller sends that check again on
-- its own, where the error is its own.
local FAILED = '-1 -1 -1 -1 -1'  -- allowed, then one limit's four numbers
local out, i = {}, 0
for c in string.gmatch(ARGV[2], '[^,]+') do
  i = i + 1
  cost = tonumber(c)
  local ok, r = pcall(decide, {KEYS[i]})
  if ok and type(r) == 'string' then out[i] = r else out[i] = FAILED end
end
return table.concat(out, ' ')
)__lua__", "fdab00a6001cb5a82d89c39c7893b75ab7f7b09d"};
const Script k_sliding_log_single = {"sliding_log", R"__lua__(#!lua
-- prelude.lua of the single-check scripts: the build puts this text in front
-- of each core/scripts/single/*.lua file (as common/prelude.lua for the
-- general scripts). Plain statements and one small function: whatever runs
-- here, every call pays.
--
-- ARGV[1] 'check', or 'checks' for coalesced checks (core/src/coalescer.h)
-- ARGV[2] the cost; for 'checks' the costs, comma-separated, decided in order
-- ARGV[3] now_us, or '' for the server's TIME
-- ARGV[4..] the limit's values (the script names them)
-- A script replies 'allowed limit remaining retry_after_ms reset_after_ms'
-- per check, all in one string (cheaper for Redis to convert than a table).
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

-- A TTL for PEXPIRE / PX in ms (at least 1) for state that must live `us`
-- more microseconds; caller-supplied time adds `slack` (one window), as
-- ttl_ms in common/prelude.lua.
local function ttl_ms(us, slack)
  if ARGV[3] ~= '' then us = us + slack end
  local ms = 1
  if us > 1000 then ms = math.ceil(us / 1000) end
  return string.format('%d', ms)
end

-- The replies: answer(j, ...) keeps check j's (in `costs`, whose cost it has
-- read), replies() returns them all as the script's reply.
local reply
local function answer(j, allowed, limit, remaining, retry_ms, reset_ms)
  reply = string.format('%d %d %d %d %d', allowed, limit, remaining, retry_ms, reset_ms)
  if costs then costs[j] = reply end
end
local function replies()
  if costs then return table.concat(costs, ' ') end
  return reply
end

-- Sliding-window log, checks of one limit (the library sends several
-- limits, blocks, peeks and refunds to ../sliding_log.lua): the common
-- call, in a script of its own without the general script's parts (tables
-- per limit, the general prelude's helpers), so it costs the Redis thread
-- less. Same ring layout and the same decisions as ../sliding_log.lua,
-- whose header describes the ring (script_diff_tests and coalesce_tests
-- hold them to it). The build puts common/prelude.lua
-- (now, the costs, ttl_ms, the reply) in front.
--
-- KEYS[1]  the ring    ARGV[4..5]  limit, window_us
local key, limit, window = KEYS[1], tonumber(ARGV[4]), tonumber(ARGV[5])
local HDR, W, PREALLOC = 12, 8, 128
local WHOLE, BLOCK = 256, 32  -- as in ../sliding_log.lua

local function not_a_ring()
  return redis.error_reply('WRONGTYPE polylimit: ' .. key .. ' holds a value that is not a sliding log ring')
end

-- Up to WHOLE slots: the header and slots 0..limit-1 in one read (at most
-- 2 KB). Larger rings: the header, then the slots a decision probes, in
-- blocks of BLOCK slots (copying a whole large ring into Lua costs more
-- than the reads it saves).
local whole = limit <= WHOLE
local data
if whole then
  data = redis.call('GETRANGE', key, 0, HDR + W * limit - 1)
else
  data = redis.call('GETRANGE', key, 0, HDR - 1)
end
local head, used, size, fresh = 0, 0, limit, false
if data == '' then
  fresh = true
else
  if #data >= HDR then head, used, size = struct.unpack('>I4I4I4', data) end
  if #data < HDR or size < 1 or size > 1000000 or head >= size or used > size then return not_a_ring() end
  if whole and size > limit then
    -- Written for a larger limit (kept as it is): the rest of its slots.
    data = data .. redis.call('GETRANGE', key, HDR + W * limit, HDR + W * size - 1)
  elseif not whole and size < limit then
    -- Re-read whole below, as a list.
    data = data .. redis.call('GETRANGE', key, HDR, HDR + W * size - 1)
    whole = true
  end
end
-- Entry t (1..used), oldest first: slot (head - used + t - 1) % size. A
-- large ring's blocks are aligned (slots BLOCK*b ..), so in a full ring the
-- newest and the oldest entry, next to each other, usually share one.
-- (A ring above PREALLOC slots holds only the slots written so far: each
-- entry must be there, not every slot.)
local blocks  -- block number -> its bytes (a large ring only)
if not whole then blocks = {} end
local function entry(t)
  local p = (head - used + t - 1) % size
  local bytes, at = data, HDR + W * p
  if not whole then
    local b = math.floor(p / BLOCK)
    bytes = blocks[b]
    if not bytes then
      bytes = redis.call('GETRANGE', key, HDR + W * BLOCK * b, HDR + W * BLOCK * (b + 1) - 1)
      blocks[b] = bytes
    end
    at = W * (p - BLOCK * b)
  end
  if at + W > #bytes then error({err = 'WRONGTYPE polylimit: ' .. key .. ' holds a value that is not a sliding log ring'}) end
  return (struct.unpack('>d', bytes, at + 1))
end

-- A ring written for a smaller limit: its entries as a list; it is written
-- again whole at the limit's size (as ../sliding_log.lua does).
local list
if size < limit then
  list = {}
  for t = 1, used do list[t] = entry(t) end
  head, size = used % limit, limit
end

-- Entries still in the window (time > edge): the ring is sorted. While the
-- oldest is still in (a busy key's usual state), so are all: no search.
-- Else only a few entries have left since the last check, as a rule: the
-- search gallops from the oldest (1, 2, 4, ... entries on), then bisects.
local edge = now - window
local lo, hi = 1, used + 1  -- the first entry > edge lies in lo..hi
if used > 0 then
  local oldest
  if list then oldest = list[1] else oldest = entry(1) end
  if oldest > edge then
    hi = 1
  else
    local step = 1  -- entry(lo) <= edge
    while lo + step <= used do
      local e
      if list then e = list[lo + step] else e = entry(lo + step) end
      if e > edge then
        hi = lo + step
        break
      end
      lo, step = lo + step, step * 2
    end
    lo = lo + 1
  end
end
while lo < hi do
  local mid = math.floor((lo + hi) / 2)
  local e
  if list then e = list[mid] else e = entry(mid) end
  if e > edge then hi = mid else lo = mid + 1 end
end
local count = used - lo + 1
local dirty = false
if count < used then  -- forget what left the window: used shrinks, head stays
  if list then
    local keep = {}
    for t = used - count + 1, used do keep[#keep + 1] = list[t] end
    list = keep
  end
  used, dirty = count, true
end
local newest
if used > 0 then
  if list then newest = list[used] else newest = entry(used) end
end

-- Each check in turn, in memory. The admissions so far are kept aside:
-- `extra` units at `at` (one time for all: max(now, the newest entry)),
-- after the ring's `used` entries; one write for all of them after. cost
-- more units fit when the (limit - cost + 1)-th newest entry has left the
-- window (or does not exist).
local extra, at = 0, nil
for j = 1, checks do
  if costs then cost = costs[j] end
  local allowed, retry = 1, 0
  local t = used + extra - limit + cost
  if t >= 1 then
    local leaving = at
    if t <= used or extra == 0 then
      if list then leaving = list[t] else leaving = entry(t) end
    end
    if leaving > edge then allowed, retry = 0, leaving + window - now end
  end
  if allowed == 1 then
    if not at then
      at = now
      if newest and newest > at then at = newest end
    end
    extra, newest = extra + cost, at
  end
  local reset = 0
  if count + extra > 0 and newest then reset = newest + window - now end
  local remaining = limit - count - extra
  if remaining < 0 then remaining = 0 end
  local retry_ms, reset_ms = 0, 0
  if retry > 0 then retry_ms = math.ceil(retry / 1000) end
  if reset > 0 then reset_ms = math.ceil(reset / 1000) end
  answer(j, allowed, limit, remaining, retry_ms, reset_ms)
end

-- Writes n copies of `slot` into slots p..p+n-1. Making a Lua string costs
-- the server per byte, a SETRANGE call about as much as 1 KB of that: so a
-- long run goes as pieces of PIECE slots (one string, set several times; the
-- last piece overlaps the one before it with the same bytes), the farthest
-- first, so that a new STRING is allocated at its full length once.
local PIECE = 128
local function fill(p, n, slot)
  if n <= PIECE then
    redis.call('SETRANGE', key, HDR + W * p, string.rep(slot, n))
    return
  end
  local piece = string.rep(slot, PIECE)
  redis.call('SETRANGE', key, HDR + W * (p + n - PIECE), piece)
  for q = p, p + n - PIECE - 1, PIECE do redis.call('SETRANGE', key, HDR + W * q, piece) end
end

if extra > 0 then
  local cost = extra
  local slot = struct.pack('>d', at)
  if list then
    for _ = 1, cost do list[#list + 1] = at end
    while #list > size do table.remove(list, 1) end
    used, head = #list, #list % size
    local out = {struct.pack('>I4I4I4', head, used, size)}
    for i = 1, used do out[#out + 1] = struct.pack('>d', list[i]) end
    if size <= PREALLOC then out[#out + 1] = string.rep('\0', W * (size - used)) end
    redis.call('SET', key, table.concat(out), 'KEEPTTL')
    redis.call('PEXPIRE', key, ttl_ms(at + window - now, window))
  elseif fresh and (size <= PREALLOC or cost <= PIECE) then
    -- A new ring in one SET with its expiry: a small one whole, a larger one
    -- up to its last entry, as fill() and the header's SETRANGE would leave
    -- it (three calls). More than a piece of slots goes through fill(): one
    -- long Lua string costs more than its pieces' SETRANGEs.
    head, used = cost % size, cost
    local free = ''
    if size <= PREALLOC then free = string.rep('\0', W * (size - cost)) end
    redis.call('SET', key, struct.pack('>I4I4I4', head, used, size) .. string.rep(slot, cost) .. free,
               'PX', ttl_ms(at + window - now, window))
  elseif size <= PREALLOC and size <= limit and #data == HDR + W * size then
    -- The whole ring was read: the bytes the SETRANGEs below would leave, in one SET.
    local h0 = head
    local first = math.min(cost, size - h0)
    local wrapped = cost - first
    head, used = (h0 + cost) % size, math.min(size, used + cost)
    redis.call('SET', key, struct.pack('>I4I4I4', head, used, size) .. string.rep(slot, wrapped) ..
               data:sub(HDR + W * wrapped + 1, HDR + W * h0) .. string.rep(slot, first) ..
               data:sub(HDR + W * (h0 + first) + 1), 'PX', ttl_ms(at + window - now, window))
  else
    local first = math.min(cost, size - head)
    fill(head, first, slot)
    if cost > first then fill(0, cost - first, slot) end
    head, used = (head + cost) % size, math.min(size, used + cost)
    redis.call('SETRANGE', key, 0, struct.pack('>I4I4I4', head, used, size))
    redis.call('PEXPIRE', key, ttl_ms(at + window - now, window))
  end
elseif dirty then  -- the check forgot entries that left the window
  if list then
    head = used % size  -- the entries go to slots 0..used-1
    local out = {struct.pack('>I4I4I4', head, used, size)}
    for i = 1, used do out[#out + 1] = struct.pack('>d', list[i]) end
    if size <= PREALLOC then out[#out + 1] = string.rep('\0', W * (size - used)) end
    redis.call('SET', key, table.concat(out), 'KEEPTTL')
  else
    redis.call('SETRANGE', key, 0, struct.pack('>I4I4I4', head, used, size))
  end
end

return replies()
)__lua__", "f076af6f1c8b8bc9d746ba8cedb45da221477793"};

}  // namespace scripts
}  // namespace polylimit
