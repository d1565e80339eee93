"""Redis metering backend: one Lua script per atomic step, Redis `TIME` as the single clock."""

from __future__ import annotations

import asyncio
import hashlib
import itertools
import secrets
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, cast
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import redis.asyncio as aioredis
from redis import exceptions as redis_errors

from api.metering.config import MeteringConfig, Plan
from api.metering.model import (
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
from api.metering.resp import ReplyError, RespPipeline, Target
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
local function ledger(key, now, kind, route, status, tokens, base, packs)
  redis.call('XADD', key, string.format('%d-*', math.floor(now * 1000)), 'kind', kind,
    'route', route, 'status', status, 'tokens', tokens, 'base', base, 'packs', packs,
    'ts', string.format('%.6f', now))
end
"""

# KEYS: account, rate window, in-flight slots, ledger, clock.
# Reply: one string, 'unauthorized' or '<outcome> <retry after> <4 balance values>[ <base> <packs>
#   <now>]' (one bulk string parses far cheaper than an array in redis-py's Python parser).
# ARGV: now override, cost, route, slot id, limited (0/1), requests per window, window seconds,
#       concurrent, request timeout, monthly budget (-1: none), daily cap.
ADMIT = (
    _LUA_COMMON
    + """
local now = clock(KEYS[5], ARGV[1])
local a = read_account(KEYS[1])
if not a.hash or a.revoked then return 'unauthorized' end
local monthly, daily = tonumber(ARGV[10]), tonumber(ARGV[11])
local base_used, packs, day_used = counters(a, now)
local b = balance(monthly, daily, base_used, packs, day_used)
local function refuse(outcome, wait)
  return string.format('%s %d %d %d %d %d', outcome, wait, b[1], b[2], b[3], b[4])
end
if ARGV[5] == '1' then
  local window = tonumber(ARGV[7])
  redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now - window)
  if redis.call('ZCARD', KEYS[2]) >= tonumber(ARGV[6]) then
    local oldest = redis.call('ZRANGE', KEYS[2], 0, 0, 'WITHSCORES')
    return refuse('rate_limited', math.max(1, math.ceil(tonumber(oldest[2]) + window - now)))
  end
  redis.call('ZREMRANGEBYSCORE', KEYS[3], '-inf', now)
  if redis.call('ZCARD', KEYS[3]) >= tonumber(ARGV[8]) then
    return refuse('too_many_in_flight', 1)
  end
end
local cost = tonumber(ARGV[2])
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
if ARGV[5] == '1' then
  local timeout = tonumber(ARGV[9])
  redis.call('ZADD', KEYS[2], now, ARGV[4])
  redis.call('PEXPIRE', KEYS[2], math.ceil(tonumber(ARGV[7]) * 1000) + 1000)
  redis.call('ZADD', KEYS[3], now + timeout, ARGV[4])
  redis.call('PEXPIRE', KEYS[3], math.ceil(timeout * 1000) + 1000)
end
base_used, packs, day_used = base_used + from_base, packs - from_packs, day_used + cost
redis.call('HSET', KEYS[1], 'packs', packs, 'month', month_index(now), 'month_used', base_used,
  'day', day_index(now), 'day_used', day_used)
ledger(KEYS[4], now, 'charge', ARGV[3], 0, cost, from_base, from_packs)
b = balance(monthly, daily, base_used, packs, day_used)
return string.format('admitted 0 %d %d %d %d %d %d %.6f', b[1], b[2], b[3], b[4], from_base,
  from_packs, now)
"""
)

# KEYS: account, in-flight slots, ledger, clock. Reply: '<4 balance values>'.
# ARGV: now override, slot id, route, status, pack credit, base credit, charge time, monthly, daily.
SETTLE = (
    _LUA_COMMON
    + """
local now = clock(KEYS[4], ARGV[1])
redis.call('ZREM', KEYS[2], ARGV[2])
local a = read_account(KEYS[1])
local base_used, packs, day_used = counters(a, now)
local credit_packs, credit_base = tonumber(ARGV[5]), tonumber(ARGV[6])
local charged_at = tonumber(ARGV[7])
if month_index(charged_at) ~= month_index(now) then credit_base = 0 end
local credit = credit_packs + credit_base
local kind = 'settle'
if credit > 0 then
  -- No credit (net = the up-front charge): the counters stand as the admit left them.
  kind = 'credit'
  if day_index(charged_at) == day_index(now) then day_used = day_used - credit end
  base_used, packs = base_used - credit_base, packs + credit_packs
  redis.call('HSET', KEYS[1], 'packs', packs, 'month', month_index(now), 'month_used', base_used,
    'day', day_index(now), 'day_used', day_used)
end
ledger(KEYS[3], now, kind, ARGV[3], tonumber(ARGV[4]), -credit, -credit_base, -credit_packs)
local b = balance(tonumber(ARGV[8]), tonumber(ARGV[9]), base_used, packs, day_used)
return string.format('%d %d %d %d', b[1], b[2], b[3], b[4])
"""
)

# KEYS: account, ledger, clock. ARGV: now override, tokens.
TOPUP = (
    _LUA_COMMON
    + """
if redis.call('EXISTS', KEYS[1]) == 0 then return -1 end
local now = clock(KEYS[3], ARGV[1])
local packs = redis.call('HINCRBY', KEYS[1], 'packs', tonumber(ARGV[2]))
ledger(KEYS[2], now, 'topup', '', 0, 0, 0, tonumber(ARGV[2]))
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


def _pack(parts: list[str]) -> bytes:
    """One command in RESP (what redis-py's pack_command does, without its per-argument cost)."""
    text = "".join([f"${len(part)}\r\n{part}\r\n" for part in parts])
    if text.isascii():  # then a character is a byte: the lengths above are the byte lengths
        return f"*{len(parts)}\r\n{text}".encode()
    out = [b"*%d\r\n" % len(parts)]
    for part in parts:
        data = part.encode()
        out.append(b"$%d\r\n%b\r\n" % (len(data), data))
    return b"".join(out)


def _split_prefix(url: str) -> tuple[str, str]:
    """(url without `prefix`, key prefix) from `redis://host:port/db?prefix=...`."""
    parts = urlsplit(url)
    query = parse_qsl(parts.query)
    prefix = next((value for name, value in query if name == "prefix"), DEFAULT_PREFIX)
    rest = urlencode([(name, value) for name, value in query if name != "prefix"])
    return urlunsplit(parts._replace(query=rest)), prefix


class RedisMeteringStore(MeteringStore):
    """Keys live under one prefix: `acct:<id>` hash, `rate:<id>` and `conc:<id>` sorted sets,
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
        self._admit_script = _Script.of(ADMIT)
        self._settle_script = _Script.of(SETTLE)
        self._slot_prefix = secrets.token_hex(8)
        self._slot_counter = itertools.count()
        self._topup = self.client.register_script(TOPUP)
        self._revoke = self.client.register_script(REVOKE)
        self._create = self.client.register_script(CREATE)
        self._read = self.client.register_script(READ)

    def _key(self, kind: str, key_id: str = "") -> str:
        return f"{self.prefix}{kind}:{key_id}" if key_id else f"{self.prefix}{kind}"

    def _override(self) -> str:
        return "" if self.clock is None else f"{self.clock():.6f}"

    async def _call(self, make: Callable[[], Awaitable[Any]]) -> Any:
        # redis-py's reply types are unions of bytes and str; decode_responses makes them str.
        try:
            return await make()
        except (redis_errors.ConnectionError, redis_errors.TimeoutError, OSError) as exc:
            raise MeteringUnavailableError(f"metering store: {exc}") from exc

    # -- group commit: every script call queued meanwhile goes out in one pipelined round trip ----

    def _pipeline_here(self) -> RespPipeline:
        """This event loop's pipeline (its own connection), made on first use."""
        loop = asyncio.get_running_loop()
        pipeline = self._pipeline
        if pipeline is None or pipeline.loop is not loop:
            if pipeline is not None:
                pipeline.abandon()  # a connection belongs to the loop that opened it
            pipeline = self._pipeline = RespPipeline(self._target, REPLY_TIMEOUT)
        return pipeline

    async def _eval(self, script: _Script, keys: list[str], args: list[Any]) -> str:
        """EVALSHA `script` in the next group; its reply once Redis has run it (each stays atomic).

        A reply lost with the connection (or late) is the store's unavailability: the script may
        have run, so it is never re-sent. Only NOSCRIPT, which means it did not run, is retried.
        """
        packed = _pack(["EVALSHA", script.sha, str(len(keys)), *keys, *map(str, args)])
        try:
            return cast(str, await self._pipeline_here().send(packed))
        except ReplyError as exc:
            if not exc.noscript:
                raise MeteringUnavailableError(f"metering store: {exc}") from exc
        except OSError as exc:  # refused, lost, timed out (TimeoutError), unparsable
            raise MeteringUnavailableError(f"metering store: {exc}") from exc
        return await self._rerun(script, packed)

    async def _rerun(self, script: _Script, packed: bytes) -> str:
        """After NOSCRIPT (e.g. a restarted Redis): SCRIPT LOAD ahead of the step in the next group
        (once for all the steps of that script), then the step once more."""
        pipeline = self._pipeline_here()
        pipeline.send_once(_pack(["SCRIPT", "LOAD", script.source]))
        try:
            return cast(str, await pipeline.send(packed))
        except (ReplyError, OSError) as exc:
            raise MeteringUnavailableError(f"metering store: {exc}") from exc

    def _plan_args(self, plan: Plan) -> list[int]:
        if plan.monthly_budget is None or plan.daily_cap is None:
            return [-1, -1]
        return [plan.monthly_budget, plan.daily_cap]

    async def _lookup(self, key_id: str) -> tuple[str, str, bool] | None:
        fields = await self._call(
            lambda: self.client.hmget(self._key("acct", key_id), ["hash", "plan", "revoked"])
        )
        stored_hash, plan, revoked = fields
        return None if stored_hash is None else (stored_hash, plan, revoked is not None)

    async def admit(self, account: Account, route: str, cost: int) -> Admission:
        plan = self.config.plan(account.plan)
        limits = self.config.limits
        slot = f"{self._slot_prefix}{next(self._slot_counter):x}"
        keys = [self._key(kind, account.key_id) for kind in ("acct", "rate", "conc", "ledger")]
        keys.append(self._key("clock"))
        args: list[Any] = [self._override(), cost, route, slot, int(plan.limited)]
        args += [limits.requests_per_window, limits.window_seconds, limits.concurrent]
        args += [limits.request_timeout_seconds, *self._plan_args(plan)]
        reply = (await self._eval(self._admit_script, keys, args)).split()
        outcome = Outcome(reply[0])
        if outcome is Outcome.UNAUTHORIZED:
            return Admission(outcome)
        balance = Balance(int(reply[2]), int(reply[3]), int(reply[4]), int(reply[5]))
        if outcome is not Outcome.ADMITTED:
            return Admission(outcome, balance, retry_after=int(reply[1]))
        charge = Charge(
            account.key_id, route, slot, cost, int(reply[6]), int(reply[7]), float(reply[8])
        )
        return Admission(outcome, balance, charge)

    async def settle(
        self, charge: Charge, status: int, final: int | None = None
    ) -> tuple[int, Balance]:
        net = net_cost(status, charge.tokens, final)
        credit_packs, credit_base = split_credit(charge, net)
        plan = self.config.plan(await self._plan_of(charge.key_id))
        keys = [self._key(kind, charge.key_id) for kind in ("acct", "conc", "ledger")]
        keys.append(self._key("clock"))
        args: list[Any] = [self._override(), charge.slot_id, charge.route, status]
        args += [credit_packs, credit_base, f"{charge.ts:.6f}", *self._plan_args(plan)]
        reply = (await self._eval(self._settle_script, keys, args)).split()
        return net, Balance(int(reply[0]), int(reply[1]), int(reply[2]), int(reply[3]))

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
        reply = await self._call(lambda: self._read(keys=keys, args=[self._override()]))
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
        self._auth_cache.pop(key_id, None)
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
        rows = await self._call(lambda: self.client.xrange(self._key("ledger", key_id), min=start))
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
        pipeline, self._pipeline = self._pipeline, None
        if pipeline is not None:
            await pipeline.aclose()  # the steps under way get their replies first
        await self.client.aclose()
