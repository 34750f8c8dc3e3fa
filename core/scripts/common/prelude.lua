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
