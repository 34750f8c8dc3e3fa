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
