"""Redis metering backend: Lua scripts (one call per group of admits and settles), Redis `TIME`
as the single clock."""

from __future__ import annotations

import asyncio
import hashlib
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from functools import partial
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import redis.asyncio as aioredis
from redis import exceptions as redis_errors

from api.metering.config import MeteringConfig, Plan
from api.metering.model import (
    UNLIMITED_BALANCE,
    Account,
    Admission,
    Balance,
    Charge,
    KeyRecord,
    LedgerEntry,
    MeteringUnavailableError,
    Outcome,
    Usage,
    day_start,
    hash_key,
    month_start,
    net_cost,
    new_key,
    split_credit,
    summarize_usage,
)
from api.metering.resp import Reply, ReplyError, RespPipeline, Target
from api.metering.store import Clock, MeteringStore

DEFAULT_PREFIX = "mi:metering:"
POOL_SIZE = 32
REPLY_TIMEOUT = 2.0
"""Seconds a group's replies may take before the store counts as unreachable (fail closed)."""

# Shared Lua: the store's clock (Redis TIME, or the test override), never going backwards, and the
# UTC calendar (days since the epoch; year * 12 + month - 1 via Hinnant's civil_from_days).
_LUA_COMMON = """
local function clock(clock_key, override)
  local t
  if override ~= '' then
    t = tonumber(override)
  else
    local tm = redis.call('TIME')
    t = tonumber(tm[1]) + tonumber(tm[2]) / 1000000
  end
  local last = tonumber(redis.call('GET', clock_key) or '0')
  if last > t then return last end
  redis.call('SET', clock_key, string.format('%.6f', t))
  return t
end
local function day_index(t) return math.floor(t / 86400) end
local function month_index(t)
  local z = math.floor(t / 86400) + 719468
  local era = math.floor(z / 146097)
  local doe = z - era * 146097
  local yoe = math.floor((doe - math.floor(doe / 1460) + math.floor(doe / 36524)
    - math.floor(doe / 146096)) / 365)
  local y = yoe + era * 400
  local doy = doe - (365 * yoe + math.floor(yoe / 4) - math.floor(yoe / 100))
  local mp = math.floor((5 * doy + 2) / 153)
  local m = mp < 10 and mp + 3 or mp - 9
  if m <= 2 then y = y + 1 end
  return y * 12 + m - 1
end
local function counters(a, now)
  local packs = tonumber(a.packs or '0')
  local base_used, day_used = 0, 0
  if tonumber(a.month or '-1') == month_index(now) then base_used = tonumber(a.month_used or '0') end
  if tonumber(a.day or '-1') == day_index(now) then day_used = tonumber(a.day_used or '0') end
  return base_used, packs, day_used
end
local function read_account(key)
  local v = redis.call('HMGET', key, 'hash', 'revoked', 'packs', 'month', 'month_used', 'day',
    'day_used')
  return {hash = v[1], revoked = v[2], packs = v[3], month = v[4], month_used = v[5],
    day = v[6], day_used = v[7]}
end
local function balance(monthly, daily, base_used, packs, day_used)
  if monthly < 0 then return {-1, -1, -1, -1} end
  return {monthly, daily, math.max(0, monthly - base_used) + packs, math.max(0, daily - day_used)}
end
-- A ledger entry's id (the ms of `now`, then Redis's sequence) and time, and `now` exactly (as
-- Redis itself writes a number: a rate window's entry), formatted once per call.
local function stamp_of(now)
  return {string.format('%d-*', math.floor(now * 1000)), string.format('%.6f', now),
    string.format('%.17g', now)}
end
local function ledger(key, stamp, kind, route, status, tokens, base, packs)
  redis.call('XADD', key, stamp[1], 'kind', kind, 'route', route, 'status', status,
    'tokens', tokens, 'base', base, 'packs', packs, 'ts', stamp[2])
end
"""

# One call per group: every admit and settle queued in one event-loop iteration, run in order (each
# sees what the steps before it left), on one reading of the clock.
# KEYS: clock, then per key of the batch its account, rate window, in-flight slots, ledger.
# ARGV: now override, requests per window, window seconds, concurrent, request timeout, concurrent
#   exports, then the
#   steps, each its kind and the index in KEYS of its key's account, then
#   admit ('a'): cost, route, slot id, limited (0/1), monthly budget (-1: none), daily cap;
#   settle ('s'): slot id, route, status, pack credit, base credit, charge time, monthly, daily;
#   record ('r', a plan without limits, after its work): route, status, net tokens;
#   free ('f', a settle with nothing to credit, behind its response): slot id, route, status.
# Reply: one string, the steps' replies joined by newlines (one bulk string parses far cheaper than
#   an array): admit 'unauthorized' or '<outcome> <retry after> <4 balance values>[ <base> <packs>
#   <now>]', settle '<4 balance values>', record 'unauthorized' or 'recorded', free 'freed', a step
#   that raised '!<error>' (the steps after it run).
BATCH = (
    _LUA_COMMON
    + """
-- A key's rate window is a list of its admits' times, oldest first: the clock never goes back, so
-- appending keeps it in order, and an admit is one RPUSH, where a sorted set's ZADD took a third
-- of the script's time in Redis (docs/metering.md).

-- Drop the window's admits at or before `cutoff` (a prefix of the list).
local function trim_window(rate, cutoff)
  local times = redis.call('LRANGE', rate, 0, -1)
  local old = 0
  while old < #times and tonumber(times[old + 1]) <= cutoff do old = old + 1 end
  if old > 0 then redis.call('LTRIM', rate, old, -1) end
end

-- How many of a key's slots in flight are exports' (their ids start with 'x'; others are hex).
local function exports_in_flight(conc, now)
  local n = 0
  for _, held in ipairs(redis.call('ZRANGEBYSCORE', conc, '(' .. now, '+inf')) do
    if string.sub(held, 1, 1) == 'x' then n = n + 1 end
  end
  return n
end

local function admit(now, stamp, acct, rate, conc, led, cost, route, slot, limited, monthly, daily,
    per_window, window, concurrent, timeout, exports)
  local a = read_account(acct)
  if not a.hash or a.revoked then return 'unauthorized' end
  local base_used, packs, day_used = counters(a, now)
  local b = balance(monthly, daily, base_used, packs, day_used)
  local function refuse(outcome, wait)
    return string.format('%s %d %d %d %d %d', outcome, wait, b[1], b[2], b[3], b[4])
  end
  if limited then
    -- The window holds the admits of the last `window` seconds and possibly older ones, never
    -- more than the limit: it is trimmed only when full, since one below the limit admits anyway.
    if redis.call('LLEN', rate) >= per_window then
      trim_window(rate, now - window)
      if redis.call('LLEN', rate) >= per_window then
        local oldest = tonumber(redis.call('LINDEX', rate, 0))
        return refuse('rate_limited', math.max(1, math.ceil(oldest + window - now)))
      end
    end
    if redis.call('ZCARD', conc) >= concurrent then
      redis.call('ZREMRANGEBYSCORE', conc, '-inf', now)
      if redis.call('ZCARD', conc) >= concurrent then
        return refuse('too_many_in_flight', 1)
      end
    end
    if string.sub(slot, 1, 1) == 'x' and exports_in_flight(conc, now) >= exports then
      return refuse('too_many_exports', 1)
    end
  end
  local from_base, from_packs = cost, 0
  if monthly >= 0 then
    local base_left = math.max(0, monthly - base_used)
    local month_left = base_left + packs
    local day_left = math.max(0, daily - day_used)
    if cost > month_left and month_left <= day_left then return refuse('monthly_limit', 0) end
    if cost > day_left then return refuse('daily_limit', 0) end
    from_base = math.min(cost, base_left)
    from_packs = cost - from_base
  end
  if limited then
    redis.call('RPUSH', rate, stamp[3])
    redis.call('PEXPIRE', rate, math.ceil(window * 1000) + 1000)
    redis.call('ZADD', conc, now + timeout, slot)
    redis.call('PEXPIRE', conc, math.ceil(timeout * 1000) + 1000)
  end
  base_used, packs, day_used = base_used + from_base, packs - from_packs, day_used + cost
  redis.call('HSET', acct, 'packs', packs, 'month', month_index(now), 'month_used', base_used,
    'day', day_index(now), 'day_used', day_used)
  ledger(led, stamp, 'charge', route, 0, cost, from_base, from_packs)
  b = balance(monthly, daily, base_used, packs, day_used)
  return string.format('admitted 0 %d %d %d %d %d %d %.6f', b[1], b[2], b[3], b[4], from_base,
    from_packs, now)
end

local function settle(now, stamp, acct, conc, led, slot, route, status, credit_packs, credit_base,
    charged_at, monthly, daily)
  redis.call('ZREM', conc, slot)
  local a = read_account(acct)
  local base_used, packs, day_used = counters(a, now)
  if month_index(charged_at) ~= month_index(now) then credit_base = 0 end
  local credit = credit_packs + credit_base
  local kind = 'settle'
  if credit > 0 then
    -- No credit (net = the up-front charge): the counters stand as the admit left them.
    kind = 'credit'
    if day_index(charged_at) == day_index(now) then day_used = day_used - credit end
    base_used, packs = base_used - credit_base, packs + credit_packs
    redis.call('HSET', acct, 'packs', packs, 'month', month_index(now), 'month_used', base_used,
      'day', day_index(now), 'day_used', day_used)
  end
  ledger(led, stamp, kind, route, status, -credit, -credit_base, -credit_packs)
  local b = balance(monthly, daily, base_used, packs, day_used)
  return string.format('%d %d %d %d', b[1], b[2], b[3], b[4])
end

-- A settle with nothing to credit, whose reply nobody reads (`release`): the slot and the row.
local function free(stamp, conc, led, slot, route, status)
  redis.call('ZREM', conc, slot)
  ledger(led, stamp, 'settle', route, status, 0, 0, 0)
  return 'freed'
end

-- Whether an account key is unknown or revoked, read by the first record step of the key in this
-- call (no step of a call creates or revokes a key, so the answer holds for the whole call).
local refused_of = {}

local function record(stamp, acct, led, route, status, tokens)
  local refused = refused_of[acct]
  if refused == nil then
    local v = redis.call('HMGET', acct, 'hash', 'revoked')
    refused = not v[1] or v[2] ~= false
    refused_of[acct] = refused
  end
  if refused then return 'unauthorized' end
  -- A plan without limits: the whole net cost is drawn from the base, as an admit would; its
  -- period counters are not kept (no balance reads them): the ledger entry is the only write.
  ledger(led, stamp, 'charge', route, status, tokens, tokens, 0)
  return 'recorded'
end

local now = clock(KEYS[1], ARGV[1])
local stamp = stamp_of(now)
local per_window, window = tonumber(ARGV[2]), tonumber(ARGV[3])
local concurrent, timeout, exports = tonumber(ARGV[4]), tonumber(ARGV[5]), tonumber(ARGV[6])
local replies = {}
local i = 7
while i <= #ARGV do
  local k = tonumber(ARGV[i + 1])
  local ok, reply
  if ARGV[i] == 'a' then
    ok, reply = pcall(admit, now, stamp, KEYS[k], KEYS[k + 1], KEYS[k + 2], KEYS[k + 3],
      tonumber(ARGV[i + 2]), ARGV[i + 3], ARGV[i + 4], ARGV[i + 5] == '1', tonumber(ARGV[i + 6]),
      tonumber(ARGV[i + 7]), per_window, window, concurrent, timeout, exports)
    i = i + 8
  elseif ARGV[i] == 'f' then
    ok, reply = pcall(free, stamp, KEYS[k + 2], KEYS[k + 3], ARGV[i + 2], ARGV[i + 3],
      ARGV[i + 4])
    i = i + 5
  elseif ARGV[i] == 'r' then
    ok, reply = pcall(record, stamp, KEYS[k], KEYS[k + 3], ARGV[i + 2], tonumber(ARGV[i + 3]),
      tonumber(ARGV[i + 4]))
    i = i + 5
  else
    ok, reply = pcall(settle, now, stamp, KEYS[k], KEYS[k + 2], KEYS[k + 3], ARGV[i + 2],
      ARGV[i + 3], tonumber(ARGV[i + 4]), tonumber(ARGV[i + 5]), tonumber(ARGV[i + 6]),
      tonumber(ARGV[i + 7]), tonumber(ARGV[i + 8]), tonumber(ARGV[i + 9]))
    i = i + 10
  end
  if not ok then
    if type(reply) == 'table' then reply = reply.err end
    reply = '!' .. string.gsub(tostring(reply), '\\n', ' ')
  end
  replies[#replies + 1] = reply
end
return table.concat(replies, '\\n')
"""
)

# KEYS: account, ledger, clock. ARGV: now override, tokens.
TOPUP = (
    _LUA_COMMON
    + """
if redis.call('EXISTS', KEYS[1]) == 0 then return -1 end
local now = clock(KEYS[3], ARGV[1])
local packs = redis.call('HINCRBY', KEYS[1], 'packs', tonumber(ARGV[2]))
ledger(KEYS[2], stamp_of(now), 'topup', '', 0, 0, 0, tonumber(ARGV[2]))
return packs
"""
)

# KEYS: account, clock. ARGV: now override.
REVOKE = (
    _LUA_COMMON
    + """
if redis.call('EXISTS', KEYS[1]) == 0 or redis.call('HEXISTS', KEYS[1], 'revoked') == 1 then
  return 0
end
redis.call('HSET', KEYS[1], 'revoked', string.format('%.6f', clock(KEYS[2], ARGV[1])))
return 1
"""
)

# KEYS: account, key index, clock. ARGV: now override, hash, plan, name, key id.
CREATE = (
    _LUA_COMMON
    + """
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
local now = clock(KEYS[3], ARGV[1])
redis.call('HSET', KEYS[1], 'hash', ARGV[2], 'plan', ARGV[3], 'name', ARGV[4],
  'created', string.format('%.6f', now), 'packs', 0)
redis.call('SADD', KEYS[2], ARGV[5])
return 1
"""
)

# KEYS: account, clock. ARGV: now override. Returns the account fields and the store's now.
READ = (
    _LUA_COMMON
    + """
local now = clock(KEYS[2], ARGV[1])
local v = redis.call('HGETALL', KEYS[1])
table.insert(v, '_now')
table.insert(v, string.format('%.6f', now))
return v
"""
)


@dataclass(frozen=True, slots=True)
class _Script:
    source: str
    sha: str

    @classmethod
    def of(cls, source: str) -> _Script:
        return cls(source, hashlib.sha1(source.encode()).hexdigest())


class _Batch:
    """The admits and settles queued in one event-loop iteration: one BATCH call, whose one reply
    resolves every step's future as it is parsed (the pipeline's waiter for that call).

    Failure: a lost or late reply, or an error reply, fails every step (MeteringUnavailableError;
    the batch may have run, so it is never re-sent), except NOSCRIPT (it did not run): SCRIPT LOAD
    ahead of the batch, sent once more, in the next group.
    """

    __slots__ = (
        "arg_count",
        "args",
        "converters",
        "futures",
        "groups",
        "key_count",
        "keys",
        "packed",
        "pipeline",
        "state",
        "store",
    )

    def __init__(self, store: RedisMeteringStore, pipeline: RespPipeline) -> None:
        self.store = store
        self.pipeline = pipeline
        # KEYS and the steps' ARGV, each element already in RESP (`_bulk`): a key's names and a
        # route, a plan's budget or a status are packed once per process, not once per step.
        self.keys: list[bytes] = [store._packed_clock]
        self.key_count = 1
        self.groups: dict[str, int] = {}  # key id -> index (1-based) of its keys in KEYS
        self.args: list[bytes] = []
        self.arg_count = 0
        self.futures: list[asyncio.Future[Any] | None] = []  # None: a release (not awaited)
        # What each step's future is given: its reply as it came (None), or that reply read by
        # this function (which raises MeteringUnavailableError for a step that failed).
        self.converters: list[Callable[[str], Any] | None] = []
        self.packed = b""
        self.state = "queued"  # then "sent", "resent" (after NOSCRIPT), "done"

    def send(self) -> None:
        if self.state != "queued":  # sent early, by a read that must follow it (`_steps_done`)
            return
        store = self.store
        if store._batch is self:
            store._batch = None
        # EVALSHA, its sha, the number of keys, the keys, then the call's own arguments (the
        # clock override and the limits) and the steps'.
        parts = 3 + self.key_count + 1 + store._limit_count + self.arg_count
        self.packed = b"".join(
            [
                b"*%d\r\n" % parts,
                store._packed_evalsha,
                _bulk(str(self.key_count)),
                *self.keys,
                _bulk(store._override()),
                store._packed_limits,
                *self.args,
            ]
        )
        self.state = "sent"
        store._in_flight.add(self)
        self.pipeline.send_to(self.packed, self)
        self.pipeline.flush()  # this iteration: the steps queued it are all in

    def done(self) -> bool:
        return self.state == "done"

    def set_result(self, result: Reply, /) -> None:
        replies = result.split("\n") if isinstance(result, str) else []
        if len(replies) != len(self.futures):
            self.set_exception(
                ConnectionError(f"a BATCH reply that is not one per step: {result!r}")
            )
            return
        self._finish()
        for future, convert, reply in zip(self.futures, self.converters, replies, strict=True):
            if future is None or future.done():  # a release; or its caller was cancelled
                continue
            if convert is None:
                future.set_result(reply)
                continue
            try:
                future.set_result(convert(reply))
            except MeteringUnavailableError as failure:
                future.set_exception(failure)

    def set_exception(self, exception: BaseException, /) -> None:
        if isinstance(exception, ReplyError) and exception.noscript and self.state == "sent":
            self.state = "resent"
            self.pipeline.send_once(_pack(["SCRIPT", "LOAD", self.store._batch_script.source]))
            self.pipeline.send_to(self.packed, self)
            return
        self._finish()
        for future in self.futures:
            if future is not None and not future.done():
                failure = MeteringUnavailableError(f"metering store: {exception}")
                failure.__cause__ = exception
                future.set_exception(failure)

    def _finish(self) -> None:
        self.state = "done"
        self.store._in_flight.discard(self)


def _split_reply(reply: str) -> list[str]:
    """A step's reply, split; a step that raised inside the script fails the request alone."""
    if reply[0] == "!":
        raise MeteringUnavailableError(f"metering store: {reply[1:]}")
    return reply.split()


_OUTCOMES = {outcome.value: outcome for outcome in Outcome}
"""An admit reply's first word -> its outcome (a dict lookup, cheaper than the enum's call)."""


def _admission(key_id: str, route: str, slot: str, cost: int, reply: str) -> Admission:
    """An admit step's reply: its outcome, the balance and, admitted, the charge."""
    parts = _split_reply(reply)
    try:
        outcome = _OUTCOMES[parts[0]]
        if outcome is Outcome.UNAUTHORIZED:
            return Admission(outcome)
        balance = Balance(int(parts[2]), int(parts[3]), int(parts[4]), int(parts[5]))
        if outcome is not Outcome.ADMITTED:
            return Admission(outcome, balance, retry_after=int(parts[1]))
        charge = Charge(key_id, route, slot, cost, int(parts[6]), int(parts[7]), float(parts[8]))
    except (KeyError, ValueError, IndexError) as exc:  # not a reply of this script: fail closed
        raise MeteringUnavailableError(f"metering store: an admit reply {reply!r}") from exc
    return Admission(outcome, balance, charge)


def _recorded(reply: str) -> Balance | None:
    """A record step's reply: None when the key was revoked (nothing was recorded)."""
    return None if _split_reply(reply)[0] == Outcome.UNAUTHORIZED else UNLIMITED_BALANCE


def _bulk(part: str) -> bytes:
    """One argument of a command in RESP: its length in bytes, then its bytes."""
    data = part.encode()
    return b"$%d\r\n%b\r\n" % (len(data), data)


def _budget_args(plan: Plan) -> tuple[bytes, bytes]:
    """The BATCH script's budget arguments of a plan: its monthly budget and daily cap, -1 for
    a plan without a budget."""
    if plan.monthly_budget is None or plan.daily_cap is None:
        return (_bulk("-1"), _bulk("-1"))
    return (_bulk(str(plan.monthly_budget)), _bulk(str(plan.daily_cap)))


_ADMIT, _SETTLE, _FREE, _RECORD = (_bulk(kind) for kind in ("a", "s", "f", "r"))
"""The BATCH script's step kinds, in RESP."""
_ZERO, _ONE = _bulk("0"), _bulk("1")
_INDEXES = tuple(_bulk(str(index)) for index in range(4 * 256 + 2))
"""A step's index of its key's names in KEYS (1-based, the clock's first), in RESP: every index of
a call of up to 256 keys."""
PACKED_SIZE = 65_536
"""Keys' names (and repeated arguments) a process keeps packed before it drops them all."""


def _pack(parts: list[str]) -> bytes:
    """One command in RESP (what redis-py's pack_command does, without its per-argument cost)."""
    return b"*%d\r\n%b" % (len(parts), b"".join([_bulk(part) for part in parts]))


def _split_prefix(url: str) -> tuple[str, str]:
    """(url without `prefix`, key prefix) from `redis://host:port/db?prefix=...`."""
    parts = urlsplit(url)
    query = parse_qsl(parts.query)
    prefix = next((value for name, value in query if name == "prefix"), DEFAULT_PREFIX)
    rest = urlencode([(name, value) for name, value in query if name != "prefix"])
    return urlunsplit(parts._replace(query=rest)), prefix


class RedisMeteringStore(MeteringStore):
    """Keys live under one prefix: `acct:<id>` hash, `rate:<id>` list, `conc:<id>` sorted set,
    `ledger:<id>` stream, `keys` set, `clock`."""

    def __init__(self, url: str, config: MeteringConfig, clock: Clock | None = None) -> None:
        super().__init__(config, clock)
        client_url, self.prefix = _split_prefix(url)
        # A blocking pool: a burst waits for a free connection instead of failing (fail closed
        # only when Redis itself is unreachable or a connection stays busy for 2 s).
        pool = aioredis.BlockingConnectionPool.from_url(
            client_url,
            max_connections=POOL_SIZE,
            timeout=2.0,
            decode_responses=True,
            socket_connect_timeout=1.0,
            socket_timeout=2.0,
        )
        self.client: aioredis.Redis = aioredis.Redis.from_pool(pool)
        self._pool = pool
        # Admits and settles skip redis-py: a pipelined RESP client of their own (api.metering.resp).
        self._target = Target.from_url(client_url)
        self._pipeline: RespPipeline | None = None
        self._batch_script = _Script.of(BATCH)
        self._evalsha = ("", b"")  # (the sha, EVALSHA and the sha in RESP): `_packed_evalsha`
        limits = config.limits
        self._packed_clock = _bulk(self._key("clock"))
        call_limits = (
            limits.requests_per_window,
            limits.window_seconds,
            limits.concurrent,
            limits.request_timeout_seconds,
            limits.concurrent_exports,
        )
        self._packed_limits = b"".join(_bulk(str(limit)) for limit in call_limits)
        self._limit_count = len(call_limits)
        # A key's four names in RESP, and repeated arguments (routes, statuses, costs, budgets),
        # each packed once: per customer step they were most of the client's packing work (the
        # caches section's row "packed names and arguments").
        self._packed_names: dict[str, bytes] = {}
        self._packed_args: dict[str, bytes] = {}
        # Per plan: its two budget arguments (-1 for none), packed once.
        self._packed_budgets = {name: _budget_args(plan) for name, plan in config.plans.items()}
        self._batch: _Batch | None = None  # the group being queued in this loop iteration
        self._in_flight: set[_Batch] = set()  # sent, reply pending
        self._topup = self.client.register_script(TOPUP)
        self._revoke = self.client.register_script(REVOKE)
        self._create = self.client.register_script(CREATE)
        self._read = self.client.register_script(READ)

    def _key(self, kind: str, key_id: str = "") -> str:
        return f"{self.prefix}{kind}:{key_id}" if key_id else f"{self.prefix}{kind}"

    @property
    def _packed_evalsha(self) -> bytes:
        """EVALSHA and the BATCH script's sha, in RESP (the script may be replaced: tests, the
        ceiling app)."""
        sha = self._batch_script.sha
        if self._evalsha[0] != sha:
            self._evalsha = (sha, _bulk("EVALSHA") + _bulk(sha))
        return self._evalsha[1]

    def _names_of(self, key_id: str) -> bytes:
        """The key's account, rate window, slots and ledger names, in RESP (KEYS of its steps)."""
        names = self._packed_names.get(key_id)
        if names is None:
            if len(self._packed_names) >= PACKED_SIZE:
                self._packed_names.clear()
            names = self._packed_names[key_id] = b"".join(
                _bulk(self._key(kind, key_id)) for kind in ("acct", "rate", "conc", "ledger")
            )
        return names

    def _arg(self, value: str) -> bytes:
        """A step argument that repeats (a route, a status, a cost, a budget), in RESP."""
        packed = self._packed_args.get(value)
        if packed is None:
            if len(self._packed_args) >= PACKED_SIZE:
                self._packed_args.clear()
            packed = self._packed_args[value] = _bulk(value)
        return packed

    def _override(self) -> str:
        return "" if self.clock is None else f"{self.clock():.6f}"

    async def _call(self, make: Callable[[], Awaitable[Any]], *, after_steps: bool = False) -> Any:
        """`make()` through redis-py; `after_steps`: after every step this process queued (a
        released settle among them), for a read of what steps write (the ledger, an account's
        counters), not for a key's lookup."""
        if after_steps:
            await self._steps_done()
        # redis-py's reply types are unions of bytes and str; decode_responses makes them str.
        try:
            return await make()
        except (redis_errors.ConnectionError, redis_errors.TimeoutError, OSError) as exc:
            raise MeteringUnavailableError(f"metering store: {exc}") from exc

    async def _steps_done(self) -> None:
        """Send the group being queued and wait until every group sent has its reply (or has
        failed): a call on another connection (redis-py's) then sees every step this process
        queued before it, a released settle among them. Bounded by the reply timeout."""
        if self._batch is not None:
            self._batch.send()
        while self._in_flight:
            await asyncio.sleep(0.001)

    # -- group commit: the admits and settles queued meanwhile go out as one BATCH call ----------

    def _pipeline_here(self) -> RespPipeline:
        """This event loop's pipeline (its own connection), made on first use."""
        loop = asyncio.get_running_loop()
        pipeline = self._pipeline
        if pipeline is None or pipeline.loop is not loop:
            if pipeline is not None:
                pipeline.abandon()  # a connection belongs to the loop that opened it
            pipeline = self._pipeline = RespPipeline(self._target, REPLY_TIMEOUT)
        return pipeline

    def _queue(
        self,
        key_id: str,
        kind: bytes,
        args: list[bytes],
        convert: Callable[[str], Any] | None = None,
        *,
        awaited: bool = True,
    ) -> asyncio.Future[Any] | None:
        """Queue one step (its kind, then its arguments, each in RESP) in this iteration's group: a
        future of its reply (read by `convert`, when given) once Redis has run the group's BATCH
        call (None when not `awaited`: nobody reads its reply)."""
        batch = self._batch
        if batch is None or batch.state != "queued" or not batch.pipeline.loop.is_running():
            # The running loop is asked once per group (it costs a `getpid` system call); a group
            # left queued by a loop that has stopped is left to it.
            batch = self._batch = _Batch(self, self._pipeline_here())
            batch.pipeline.loop.call_soon(batch.send)
        pipeline = batch.pipeline
        keys = batch.groups.get(key_id)
        if keys is None:
            keys = batch.groups[key_id] = batch.key_count + 1
            batch.keys.append(self._names_of(key_id))
            batch.key_count += 4
        future: asyncio.Future[Any] | None = pipeline.loop.create_future() if awaited else None
        batch.futures.append(future)
        batch.converters.append(convert)
        batch.args.append(kind)
        batch.args.append(_INDEXES[keys] if keys < len(_INDEXES) else _bulk(str(keys)))
        batch.args += args
        batch.arg_count += 2 + len(args)
        return future

    async def _step(self, key_id: str, kind: bytes, args: list[bytes]) -> list[str]:
        """One admit or settle in this iteration's group: its reply, split."""
        future = self._queue(key_id, kind, args)
        assert future is not None
        return _split_reply(await future)

    def _packed_budget(self, plan_name: str) -> tuple[bytes, bytes]:
        """The plan's monthly budget and daily cap, in RESP (a plan of the config: `plan` raises
        for any other)."""
        packed = self._packed_budgets.get(plan_name)
        return _budget_args(self.config.plan(plan_name)) if packed is None else packed

    async def _lookup(self, key_id: str) -> tuple[str, str, bool] | None:
        fields = await self._call(
            lambda: self.client.hmget(self._key("acct", key_id), ["hash", "plan", "revoked"])
        )
        stored_hash, plan, revoked = fields
        return None if stored_hash is None else (stored_hash, plan, revoked is not None)

    async def _draw(self, account: Account, route: str, cost: int) -> Admission:
        return await self.admit(account, route, cost, limits=False)

    def admit(
        self, account: Account, route: str, cost: int, *, limits: bool = True
    ) -> asyncio.Future[Admission]:
        """The BATCH script's admit step; without `limits` (an `extend`) it checks no rate or
        connection limit and takes no slot, as for a plan without limits. A plain function, as
        `record`: the request awaits its step's future, read into an `Admission` as the batch's
        reply is parsed (no coroutine of its own)."""
        plan = self.config.plan(account.plan)
        slot = self.new_slot(route)
        limited = _ONE if plan.limited and limits else _ZERO
        arg = self._arg
        args = [
            arg(str(cost)),
            arg(route),
            _bulk(slot),
            limited,
            *self._packed_budget(account.plan),
        ]
        future = self._queue(
            account.key_id, _ADMIT, args, partial(_admission, account.key_id, route, slot, cost)
        )
        assert future is not None
        return future

    async def settle(
        self, charge: Charge, status: int, final: int | None = None
    ) -> tuple[int, Balance]:
        net = net_cost(status, charge.tokens, final)
        credit_packs, credit_base = split_credit(charge, net)
        budget = self._packed_budget(await self._plan_of(charge.key_id))
        arg = self._arg
        args = [_bulk(charge.slot_id), arg(charge.route), arg(str(status))]
        args += [arg(str(credit_packs)), arg(str(credit_base)), _bulk(f"{charge.ts:.6f}"), *budget]
        reply = await self._step(charge.key_id, _SETTLE, args)
        return net, Balance(int(reply[0]), int(reply[1]), int(reply[2]), int(reply[3]))

    def release(self, charge: Charge, status: int) -> None:
        # The script's free step: the settle with nothing to credit, which reads no account.
        args = [_bulk(charge.slot_id), self._arg(charge.route), self._arg(str(status))]
        self._queue(charge.key_id, _FREE, args, awaited=False)

    def record(
        self, account: Account, route: str, status: int, tokens: int
    ) -> asyncio.Future[Balance | None]:
        # A plain function: the request awaits its batch's future itself (no coroutine).
        args = [self._arg(route), self._arg(str(status)), self._arg(str(tokens))]
        future = self._queue(account.key_id, _RECORD, args, _recorded)
        assert future is not None
        return future

    async def _plan_of(self, key_id: str) -> str:
        cached = self._auth_cache.get(key_id)
        if cached is not None:
            return cached[1].plan
        plan = await self._call(lambda: self.client.hget(self._key("acct", key_id), "plan"))
        if plan is None:
            raise KeyError(key_id)
        return str(plan)

    async def _read_account(self, key_id: str) -> tuple[dict[str, str], float]:
        keys = [self._key("acct", key_id), self._key("clock")]
        reply = await self._call(
            lambda: self._read(keys=keys, args=[self._override()]), after_steps=True
        )
        fields = dict(zip(reply[::2], reply[1::2], strict=True))
        now = float(fields.pop("_now"))
        if "hash" not in fields:
            raise KeyError(key_id)
        return fields, now

    def _balance_from(self, fields: dict[str, str], now: float) -> tuple[Balance, int]:
        from api.metering.model import balance_of, day_index, month_index

        plan = self.config.plan(fields["plan"])
        packs = int(fields.get("packs", 0))
        same_month = int(fields.get("month", -1)) == month_index(now)
        same_day = int(fields.get("day", -1)) == day_index(now)
        base_used = int(fields.get("month_used", 0)) if same_month else 0
        day_used = int(fields.get("day_used", 0)) if same_day else 0
        return balance_of(plan, base_used, packs, day_used), packs

    async def balance(self, account: Account) -> Balance:
        fields, now = await self._read_account(account.key_id)
        return self._balance_from(fields, now)[0]

    async def create_key(self, plan: str, name: str = "") -> str:
        self.config.plan(plan)
        while True:
            key, key_id = new_key()
            keys = [self._key("acct", key_id), self._key("keys"), self._key("clock")]
            args = [self._override(), hash_key(key), plan, name, key_id]
            if await self._call(lambda: self._create(keys=keys, args=args)):  # noqa: B023
                return key

    async def list_keys(self) -> list[KeyRecord]:
        key_ids = sorted(await self._call(lambda: self.client.smembers(self._key("keys"))))
        records = []
        for key_id in key_ids:
            fields = await self._call(lambda: self.client.hgetall(self._key("acct", key_id)))  # noqa: B023
            revoked = fields.get("revoked")
            records.append(
                KeyRecord(
                    key_id,
                    fields["plan"],
                    fields.get("name", ""),
                    float(fields["created"]),
                    float(revoked) if revoked else None,
                    int(fields.get("packs", 0)),
                )
            )
        return sorted(records, key=lambda record: (record.created_at, record.key_id))

    async def revoke(self, key_id: str) -> bool:
        keys = [self._key("acct", key_id), self._key("clock")]
        revoked = await self._call(lambda: self._revoke(keys=keys, args=[self._override()]))
        self._forget(key_id)
        return bool(revoked)

    async def topup(self, key_id: str, tokens: int) -> int:
        if tokens <= 0:
            raise ValueError("a top-up adds a positive number of tokens")
        keys = [self._key("acct", key_id), self._key("ledger", key_id), self._key("clock")]
        packs = int(
            await self._call(lambda: self._topup(keys=keys, args=[self._override(), tokens]))
        )
        if packs < 0:
            raise KeyError(key_id)
        return packs

    async def ledger(self, key_id: str, since: float = 0.0) -> list[LedgerEntry]:
        start = str(int(since * 1000))
        rows = await self._call(
            lambda: self.client.xrange(self._key("ledger", key_id), min=start), after_steps=True
        )
        return [
            LedgerEntry(
                key_id,
                fields["kind"],
                fields["route"],
                int(fields["status"]),
                int(fields["tokens"]),
                int(fields["base"]),
                int(fields["packs"]),
                float(fields["ts"]),
            )
            for _, fields in rows
        ]

    async def usage(self, key_id: str) -> Usage:
        fields, now = await self._read_account(key_id)
        balance, packs = self._balance_from(fields, now)
        entries = await self.ledger(key_id, since=month_start(now))
        return summarize_usage(key_id, fields["plan"], balance, packs, entries, day_start(now))

    async def ping(self) -> float:
        started = time.perf_counter()
        await self._call(lambda: self.client.ping())
        return (time.perf_counter() - started) * 1000

    async def close(self) -> None:
        if self._pipeline is not None:
            # The steps queued and under way (released settles too) go out and get their replies
            # first; a batch not answered within the reply timeout has failed by then.
            await self._steps_done()
        pipeline, self._pipeline = self._pipeline, None
        if pipeline is not None:
            await pipeline.aclose()
        await self.client.aclose()
