-- wrk script: replays the deliveries that bench/gen_deliveries.py wrote, so every server
-- of a benchmark run gets the same signed requests in the same order per connection.
--
--   wrk -t N -s bench/deliveries.lua URL -- FILE PATH N [PART PARTS BARRIER]
--
-- Thread k of N (N must repeat wrk's -t) sends lines k, k+N, k+2N, ... of FILE as POSTs to
-- PATH; the requests are built once at start, outside the timed run. A thread that runs out
-- of lines starts over (counted as `wrapped`: for hookbox those requests are all duplicates,
-- and the harness flags the run).
--
-- wrk runs the threads' init() one after the other and starts each thread as soon as its
-- own init() is done, but times the run (-d, and so req/s) only from after the last one:
-- the first threads would send on their own while the last still loads (a second or more
-- for 100,000 deliveries), and those requests would count in req/s. So no thread sends
-- before all have loaded: the last thread's init() creates a file (named after wrk's pid,
-- removed in done()) that each thread's first request() waits for.
--
-- PART, PARTS and BARRIER: PARTS wrk processes run at once (one per hookbox replica), each
-- with its share of FILE: thread k of process PART sends the lines whose number modulo
-- N*PARTS is PART*N + k, so the shares are disjoint and together the whole file (two
-- processes of 1 thread each: the same two shares as one process of 2 threads). Their timed
-- runs start together: the last thread's init() (which wrk runs before it starts its timer)
-- creates BARRIER.PART and waits until BARRIER.0 ... BARRIER.<PARTS-1> all exist (the
-- harness removes them). done() then also prints a line starting with BENCHHIST: wrk's
-- whole latency distribution as JSON [[µs, count], ...], for the harness to merge.
--
-- done() prints one JSON line starting with BENCHJSON for the harness: requests, duration,
-- req/s, latency percentiles (µs), errors, non-2xx, and when the timed run started (Unix
-- time, s).

local ffi = require("ffi")
ffi.cdef[[
int getpid(void);
int usleep(unsigned int usec);
unsigned long pthread_self(void);
typedef struct { long tv_sec; long tv_usec; } deliveries_timeval;
int gettimeofday(deliveries_timeval *tv, void *tz);
]]
local tmpdir = os.getenv("TMPDIR")
if tmpdir == nil or tmpdir == "" then tmpdir = "/tmp" end
local go_file = tmpdir .. "/wrk-deliveries-go." .. ffi.C.getpid()

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
hist = 0
local loader = nil  -- the thread that ran init(): wrk's main thread, not this one's own
local started = false
start_unix = 0     -- set by the last thread: when every thread had loaded (the run's start)

local function unix_time()
  local tv = ffi.new("deliveries_timeval")
  ffi.C.gettimeofday(tv, nil)
  return tonumber(tv.tv_sec) + tonumber(tv.tv_usec) / 1e6
end

local function exists(path)
  local f = io.open(path, "r")
  if f then f:close() end
  return f ~= nil
end

-- The barrier between the wrk processes run at once: every one has loaded its share.
local function wait_for_parts(barrier, part, parts)
  assert(io.open(barrier .. "." .. part, "w"), "cannot create " .. barrier .. "." .. part):close()
  local deadline = unix_time() + 300
  for p = 0, parts - 1 do
    while not exists(barrier .. "." .. p) do
      assert(unix_time() < deadline, "the other wrk processes did not load their deliveries")
      ffi.C.usleep(1000)
    end
  end
end

function init(args)
  local file, path = args[1], args[2]
  local usage = "usage: -- FILE PATH THREADS [PART PARTS BARRIER]"
  local threads_n = assert(tonumber(args[3]), usage)
  local part, parts, barrier = tonumber(args[4] or 0), tonumber(args[5] or 1), args[6]
  assert(part and parts and part >= 0 and part < parts, usage)
  assert(parts == 1 or barrier, usage)
  if parts > 1 then hist = 1 end
  local stride, slot = threads_n * parts, part * threads_n + tid
  local f = assert(io.open(file, "r"), "cannot open " .. tostring(file))
  local n = 0
  for line in f:lines() do
    if n % stride == slot then
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
  loader = tonumber(ffi.C.pthread_self())
  if tid == threads_n - 1 then
    if parts > 1 then wait_for_parts(barrier, part, parts) end
    start_unix = unix_time()
    assert(io.open(go_file, "w"), "cannot create " .. go_file):close()
  end
end

-- Waits, in the thread's own first request(), until every thread has loaded. wrk's main
-- thread also calls request() once (to check the request it builds): that call must not wait.
local function wait_for_start()
  if tonumber(ffi.C.pthread_self()) == loader then return end
  while not exists(go_file) do ffi.C.usleep(1000) end
  started = true
end

function request()
  if not started then wait_for_start() end
  i = i + 1
  if i > nreqs then
    i = 1
    wrapped = wrapped + 1
  end
  return reqs[i]
end

function done(summary, latency, requests)
  os.remove(go_file)
  local wraps, loaded_total, start = 0, 0, 0
  for _, t in ipairs(threads) do
    wraps = wraps + (tonumber(t:get("wrapped")) or 0)
    loaded_total = loaded_total + (tonumber(t:get("loaded")) or 0)
    start = math.max(start, tonumber(t:get("start_unix")) or 0)
  end
  local e = summary.errors
  local secs = summary.duration / 1e6
  io.write(string.format(
    'BENCHJSON {"requests":%d,"duration_s":%.3f,"rps":%.1f,' ..
    '"p50_us":%d,"p90_us":%d,"p99_us":%d,"max_us":%d,"mean_us":%.1f,' ..
    '"non2xx":%d,"connect_errors":%d,"read_errors":%d,"write_errors":%d,"timeouts":%d,' ..
    '"wrapped":%d,"loaded":%d,"start_unix":%.3f}\n',
    summary.requests, secs, summary.requests / secs,
    latency:percentile(50), latency:percentile(90), latency:percentile(99), latency.max,
    latency.mean, e.status, e.connect, e.read, e.write, e.timeout, wraps, loaded_total, start))
  if threads[1] and tonumber(threads[1]:get("hist")) == 1 then
    -- #latency distinct values; latency(i) is the i-th smallest and how often it was seen
    -- (after wrk's own correction for coordinated omission, as its percentiles are).
    local pairs_out = {}
    for i = 1, #latency do
      local value, count = latency(i)
      pairs_out[i] = string.format("[%d,%d]", value, count)
    end
    io.write("BENCHHIST [" .. table.concat(pairs_out, ",") .. "]\n")
  end
end
