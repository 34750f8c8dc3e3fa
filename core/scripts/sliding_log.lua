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
