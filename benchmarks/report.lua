-- wrk script: each request picks one of the paths given after `--` at random; at the end, one
-- JSON line with the counts and latency percentiles (microseconds) for benchmarks/load.py.
local paths = {}

function init(args)
  for i, path in ipairs(args) do
    paths[i] = path
  end
  math.randomseed(os.time() + #paths)
end

function request()
  return wrk.format(nil, paths[math.random(#paths)])
end

function done(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    '\nBENCH_JSON {"requests": %d, "duration_us": %d, "bytes": %d, "non2xx": %d, '
      .. '"socket_errors": %d, "p50_us": %d, "p90_us": %d, "p99_us": %d, "max_us": %d, '
      .. '"mean_us": %.1f}\n',
    summary.requests, summary.duration, summary.bytes, e.status,
    e.connect + e.read + e.write + e.timeout,
    latency:percentile(50), latency:percentile(90), latency:percentile(99), latency.max,
    latency.mean))
end
