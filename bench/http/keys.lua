-- wrk script of bench/http: every request carries a key header (X-API-Key)
-- picked at random from KEYS distinct keys (many clients, not one hot key),
-- or, one request in HOT, the key "hot"; the status of every response is
-- counted. At the end one line is printed:
--   BENCH-HTTP {"requests": N, "duration_us": D, "statuses": {"200": N, ...},
--               "errors": {"connect": N, "read": N, "write": N, "timeout": N},
--               "latency_p50_us": N, "latency_p99_us": N, "latency_p999_us": N}
-- Arguments (after --): KEYS (2000), the header (X-API-Key), the path (/),
-- HOT (0: no hot key).

local threads = {}

function setup(thread)
  thread:set("id", #threads)
  table.insert(threads, thread)
end

function init(args)
  local nkeys = tonumber(args[1]) or 2000
  local header = args[2] or "X-API-Key"
  local path = args[3] or "/"
  hot_every = tonumber(args[4]) or 0
  statuses = {}
  reqs = {}
  for i = 1, nkeys do
    reqs[i] = wrk.format("GET", path, { [header] = string.format("bench-key-%05d", i) })
  end
  hot = wrk.format("GET", path, { [header] = "hot" })
  nreqs = nkeys
  count = 0
  math.randomseed(os.time() + id * 7919)
end

function request()
  count = count + 1
  if hot_every > 0 and count % hot_every == 0 then
    return hot
  end
  return reqs[math.random(nreqs)]
end

function response(status, headers, body)
  statuses[status] = (statuses[status] or 0) + 1
end

function done(summary, latency, requests)
  local total = {}
  for _, t in ipairs(threads) do
    for status, n in pairs(t:get("statuses")) do
      total[status] = (total[status] or 0) + n
    end
  end
  local parts = {}
  for status, n in pairs(total) do
    table.insert(parts, string.format('"%d": %d', status, n))
  end
  local e = summary.errors
  io.write(string.format(
    'BENCH-HTTP {"requests": %d, "duration_us": %d, "statuses": {%s}, '
      .. '"errors": {"connect": %d, "read": %d, "write": %d, "timeout": %d}, '
      .. '"latency_p50_us": %d, "latency_p99_us": %d, "latency_p999_us": %d}\n',
    summary.requests, summary.duration, table.concat(parts, ", "),
    e.connect, e.read, e.write, e.timeout, latency:percentile(50), latency:percentile(99),
    latency:percentile(99.9)))
end
