-- wrk script: replays the deliveries that bench/gen_deliveries.py wrote, so every server
-- of a benchmark run gets the same signed requests in the same order per connection.
--
--   wrk -t N -s bench/deliveries.lua URL -- FILE PATH N
--
-- Thread k of N (N must repeat wrk's -t) sends lines k, k+n, k+2n, ... of FILE as POSTs to PATH; the
-- requests are built once at start, outside the timed run. A thread that runs out of
-- lines starts over (counted as `wrapped`: for hookbox those requests are all duplicates,
-- and the harness flags the run). done() prints one JSON line starting with BENCHJSON for
-- the harness: requests, duration, req/s, latency percentiles (µs), errors, non-2xx.

local threads = {}
local counter = 0

function setup(thread)
  thread:set("tid", counter)
  counter = counter + 1
  table.insert(threads, thread)
end

local reqs = {}
local nreqs = 0
local i = 0
wrapped = 0
loaded = 0

function init(args)
  local file, path = args[1], args[2]
  local stride = assert(tonumber(args[3]), "usage: -- FILE PATH THREADS")
  local f = assert(io.open(file, "r"), "cannot open " .. tostring(file))
  local n = 0
  for line in f:lines() do
    if n % stride == tid then
      local id, event, sig, body = line:match("^([^\t]*)\t([^\t]*)\t([^\t]*)\t(.*)$")
      nreqs = nreqs + 1
      reqs[nreqs] = wrk.format("POST", path, {
        ["Content-Type"] = "application/json",
        ["User-Agent"] = "GitHub-Hookshot/bench",
        ["X-GitHub-Event"] = event,
        ["X-GitHub-Delivery"] = id,
        ["X-GitHub-Hook-ID"] = "292430182",
        ["X-Hub-Signature-256"] = sig,
      }, body)
    end
    n = n + 1
  end
  f:close()
  loaded = nreqs
  assert(nreqs > 0, "no requests for thread " .. tostring(tid))
end

function request()
  i = i + 1
  if i > nreqs then
    i = 1
    wrapped = wrapped + 1
  end
  return reqs[i]
end

function done(summary, latency, requests)
  local wraps, loaded_total = 0, 0
  for _, t in ipairs(threads) do
    wraps = wraps + (tonumber(t:get("wrapped")) or 0)
    loaded_total = loaded_total + (tonumber(t:get("loaded")) or 0)
  end
  local e = summary.errors
  local secs = summary.duration / 1e6
  io.write(string.format(
    'BENCHJSON {"requests":%d,"duration_s":%.3f,"rps":%.1f,' ..
    '"p50_us":%d,"p90_us":%d,"p99_us":%d,"max_us":%d,"mean_us":%.1f,' ..
    '"non2xx":%d,"connect_errors":%d,"read_errors":%d,"write_errors":%d,"timeouts":%d,' ..
    '"wrapped":%d,"loaded":%d}\n',
    summary.requests, secs, summary.requests / secs,
    latency:percentile(50), latency:percentile(90), latency:percentile(99), latency.max,
    latency.mean, e.status, e.connect, e.read, e.write, e.timeout, wraps, loaded_total))
end
