-- wrk script of bench/http/bench_reload.py: one request in 8 carries the hot
-- tenant ("hot", on a small plan), the others one of TENANTS tenants picked at
-- random; the status of every response is counted. At the end one line:
--   BENCH-HTTP {"requests": N, "duration_us": D, "statuses": {...},
--               "errors": {...}, "latency_p50_us": N, "latency_p99_us": N,
--               "latency_p999_us": N}
-- Argument (after --): the number of tenants (2000).

local threads = {}

function setup(thread)
  thread:set("id", #threads)
  table.insert(threads, thread)
end

function init(args)
  local n = tonumber(args[1]) or 2000
  statuses = {}
  reqs = {}
  for i = 1, n do
    reqs[i] = wrk.format("GET", "/api/x", { ["X-Tenant"] = string.format("t%05d", i) })
  end
  hot = wrk.format("GET", "/api/x", { ["X-Tenant"] = "hot" })
  nreqs = n
  count = 0
  math.randomseed(os.time() + id * 7919)
end

function request()
  count = count + 1
  if count % 8 == 0 then
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
