-- wrk script: each request picks one of the paths given after `--` at random; at the end, one
-- JSON line with the counts and latency percentiles (microseconds) for benchmarks/load.py.
-- An argument `keys=<file>` (one API key a line) sends each request with the next key of the file
-- as its bearer token, round robin: the load of many customers, none of whom reaches a per-key
-- limit. With one path, every key's request is formatted once (wrk then sends prepared bytes, as
-- it does without keys, so the load generator costs the same with keys as without).
local paths = {}
local keyed = {}
local next_key = 0
local prepared = false

local function read_keys(file)
  local keys = {}
  for line in io.lines(file) do
    if line ~= "" then keys[#keys + 1] = line end
  end
  return keys
end

function init(args)
  local keys = nil
  for _, arg in ipairs(args) do
    if string.sub(arg, 1, 5) == "keys=" then
      keys = read_keys(string.sub(arg, 6))
    else
      paths[#paths + 1] = arg
    end
  end
  math.randomseed(os.time() + #paths)
  if keys == nil then return end
  for i, key in ipairs(keys) do
    keyed[i] = key
  end
  -- Start each run at a random key, so that successive runs do not begin on the same keys.
  next_key = math.random(#keyed) - 1
  if #paths == 1 then
    for i, key in ipairs(keyed) do
      wrk.headers["Authorization"] = "Bearer " .. key
      keyed[i] = wrk.format(nil, paths[1])
    end
    wrk.headers["Authorization"] = nil
    prepared = true
  end
end

function request()
  if #keyed == 0 then
    return wrk.format(nil, paths[math.random(#paths)])
  end
  next_key = next_key % #keyed + 1
  if prepared then
    return keyed[next_key]
  end
  wrk.headers["Authorization"] = "Bearer " .. keyed[next_key]
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
