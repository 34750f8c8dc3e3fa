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
