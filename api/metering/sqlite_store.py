"""SQLite metering backend: WAL, one `BEGIN IMMEDIATE` transaction per check-and-charge."""

from __future__ import annotations

import asyncio
import math
import sqlite3
import time
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, TypeVar

from api.metering.config import MeteringConfig
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
    balance_of,
    day_index,
    day_start,
    draw,
    hash_key,
    month_index,
    month_start,
    net_cost,
    new_key,
    split_credit,
    summarize_usage,
)
from api.metering.store import Clock, MeteringStore

T = TypeVar("T")

SCHEMA = """
CREATE TABLE IF NOT EXISTS accounts (
    key_id TEXT PRIMARY KEY,
    key_hash TEXT NOT NULL,
    plan TEXT NOT NULL,
    name TEXT NOT NULL DEFAULT '',
    created_at REAL NOT NULL,
    revoked_at REAL,
    pack_balance INTEGER NOT NULL DEFAULT 0,
    month INTEGER NOT NULL DEFAULT 0,
    month_used INTEGER NOT NULL DEFAULT 0,
    day INTEGER NOT NULL DEFAULT 0,
    day_used INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS rate_events (key_id TEXT NOT NULL, ts REAL NOT NULL);
CREATE INDEX IF NOT EXISTS rate_events_key_ts ON rate_events (key_id, ts);
CREATE TABLE IF NOT EXISTS in_flight (
    slot_id TEXT PRIMARY KEY, key_id TEXT NOT NULL, expires_at REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS in_flight_key ON in_flight (key_id, expires_at);
CREATE TABLE IF NOT EXISTS ledger (
    id INTEGER PRIMARY KEY,
    key_id TEXT NOT NULL,
    kind TEXT NOT NULL,
    route TEXT NOT NULL,
    status INTEGER NOT NULL,
    tokens INTEGER NOT NULL,
    base_tokens INTEGER NOT NULL,
    pack_tokens INTEGER NOT NULL,
    ts REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS ledger_key_ts ON ledger (key_id, ts);
CREATE TABLE IF NOT EXISTS clock (id INTEGER PRIMARY KEY CHECK (id = 1), last REAL NOT NULL);
"""

_ACCOUNT_COLUMNS = "plan, revoked_at, pack_balance, month, month_used, day, day_used"


class SqliteMeteringStore(MeteringStore):
    """One connection on one dedicated thread per process; processes share the file (WAL)."""

    def __init__(self, path: Path, config: MeteringConfig, clock: Clock | None = None) -> None:
        super().__init__(config, clock)
        self.path = path
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="metering-sqlite")
        self._conn: sqlite3.Connection | None = None
        self._closed = False

    # -- plumbing -----------------------------------------------------------------------------

    def _connection(self) -> sqlite3.Connection:
        if self._conn is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            conn = sqlite3.connect(self.path, isolation_level=None, timeout=5.0)
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
            conn.execute("PRAGMA busy_timeout=5000")
            conn.executescript(SCHEMA)
            self._conn = conn
        return self._conn

    async def _run(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        def call() -> T:
            conn = self._connection()
            return fn(conn)

        try:
            return await asyncio.get_running_loop().run_in_executor(self._executor, call)
        except (sqlite3.OperationalError, OSError) as exc:
            raise MeteringUnavailableError(f"metering store: {exc}") from exc

    def _transaction(self, conn: sqlite3.Connection, body: Callable[[float], T]) -> T:
        """Run `body(now)` inside BEGIN IMMEDIATE with the store's monotonic clock."""
        conn.execute("BEGIN IMMEDIATE")
        try:
            now = self._now(conn)
            result = body(now)
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")
        return result

    def _now(self, conn: sqlite3.Connection) -> float:
        # One clock, never backwards across processes: the last time any transaction saw.
        now = self.clock() if self.clock else time.time()
        row = conn.execute("SELECT last FROM clock WHERE id = 1").fetchone()
        if row is not None and row[0] > now:
            return float(row[0])
        conn.execute("INSERT OR REPLACE INTO clock (id, last) VALUES (1, ?)", (now,))
        return now

    def _counters(self, row: tuple[Any, ...], now: float) -> tuple[int, int, int]:
        """(base used this month, pack balance, used today), with periods reset by the calendar."""
        _, _, packs, month, month_used, day, day_used = row
        base_used = month_used if month == month_index(now) else 0
        today_used = day_used if day == day_index(now) else 0
        return base_used, packs, today_used

    # -- hot path -----------------------------------------------------------------------------

    async def _lookup(self, key_id: str) -> tuple[str, str, bool] | None:
        def query(conn: sqlite3.Connection) -> tuple[str, str, bool] | None:
            row = conn.execute(
                "SELECT key_hash, plan, revoked_at FROM accounts WHERE key_id = ?", (key_id,)
            ).fetchone()
            return None if row is None else (row[0], row[1], row[2] is not None)

        return await self._run(query)

    async def admit(self, account: Account, route: str, cost: int) -> Admission:
        slot_id = uuid.uuid4().hex
        return await self._run(
            lambda conn: self._transaction(
                conn, lambda now: self._admit(conn, account, route, cost, slot_id, now)
            )
        )

    def _admit(
        self,
        conn: sqlite3.Connection,
        account: Account,
        route: str,
        cost: int,
        slot: str,
        now: float,
    ) -> Admission:
        row = conn.execute(
            f"SELECT {_ACCOUNT_COLUMNS} FROM accounts WHERE key_id = ?", (account.key_id,)
        ).fetchone()
        if row is None or row[1] is not None:
            return Admission(Outcome.UNAUTHORIZED)
        plan = self.config.plan(row[0])
        base_used, packs, today_used = self._counters(row, now)
        balance = balance_of(plan, base_used, packs, today_used)
        if plan.limited:
            refused = self._check_limits(conn, account.key_id, now)
            if refused is not None:
                return Admission(refused[0], balance, retry_after=refused[1])
        drawn = draw(plan, cost, base_used, packs, today_used)
        if isinstance(drawn, Outcome):
            return Admission(drawn, balance)
        from_base, from_packs = drawn
        self._record_admission(conn, account.key_id, slot, now, plan.limited)
        conn.execute(
            "UPDATE accounts SET pack_balance = ?, month = ?, month_used = ?, day = ?, day_used = ?"
            " WHERE key_id = ?",
            (
                packs - from_packs,
                month_index(now),
                base_used + from_base,
                day_index(now),
                today_used + cost,
                account.key_id,
            ),
        )
        self._ledger_row(conn, account.key_id, "charge", route, 0, cost, from_base, from_packs, now)
        charge = Charge(account.key_id, route, slot, cost, from_base, from_packs, now)
        after = balance_of(plan, base_used + from_base, packs - from_packs, today_used + cost)
        return Admission(Outcome.ADMITTED, after, charge)

    def _check_limits(
        self, conn: sqlite3.Connection, key_id: str, now: float
    ) -> tuple[Outcome, int] | None:
        limits = self.config.limits
        conn.execute(
            "DELETE FROM rate_events WHERE key_id = ? AND ts <= ?",
            (key_id, now - limits.window_seconds),
        )
        count, oldest = conn.execute(
            "SELECT COUNT(*), MIN(ts) FROM rate_events WHERE key_id = ?", (key_id,)
        ).fetchone()
        if count >= limits.requests_per_window:
            wait = math.ceil(oldest + limits.window_seconds - now)
            return Outcome.RATE_LIMITED, max(1, wait)
        conn.execute("DELETE FROM in_flight WHERE key_id = ? AND expires_at <= ?", (key_id, now))
        (busy,) = conn.execute(
            "SELECT COUNT(*) FROM in_flight WHERE key_id = ?", (key_id,)
        ).fetchone()
        if busy >= limits.concurrent:
            return Outcome.TOO_MANY_IN_FLIGHT, 1
        return None

    def _record_admission(
        self, conn: sqlite3.Connection, key_id: str, slot: str, now: float, limited: bool
    ) -> None:
        if not limited:
            return
        conn.execute("INSERT INTO rate_events (key_id, ts) VALUES (?, ?)", (key_id, now))
        conn.execute(
            "INSERT INTO in_flight (slot_id, key_id, expires_at) VALUES (?, ?, ?)",
            (slot, key_id, now + self.config.limits.request_timeout_seconds),
        )

    @staticmethod
    def _ledger_row(
        conn: sqlite3.Connection,
        key_id: str,
        kind: str,
        route: str,
        status: int,
        tokens: int,
        base: int,
        packs: int,
        ts: float,
    ) -> None:
        conn.execute(
            "INSERT INTO ledger (key_id, kind, route, status, tokens, base_tokens, pack_tokens, ts)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (key_id, kind, route, status, tokens, base, packs, ts),
        )

    async def settle(
        self, charge: Charge, status: int, final: int | None = None
    ) -> tuple[int, Balance]:
        net = net_cost(status, charge.tokens, final)
        balance = await self._run(
            lambda conn: self._transaction(
                conn, lambda now: self._settle(conn, charge, net, status, now)
            )
        )
        return net, balance

    def _settle(
        self, conn: sqlite3.Connection, charge: Charge, net: int, status: int, now: float
    ) -> Balance:
        conn.execute("DELETE FROM in_flight WHERE slot_id = ?", (charge.slot_id,))
        row = conn.execute(
            f"SELECT {_ACCOUNT_COLUMNS} FROM accounts WHERE key_id = ?", (charge.key_id,)
        ).fetchone()
        plan = self.config.plan(row[0])
        base_used, packs, today_used = self._counters(row, now)
        credit_packs, credit_base = split_credit(charge, net)
        same_month = month_index(charge.ts) == month_index(now)
        if not same_month:
            credit_base = 0  # the base it came from has reset; nothing to give back
        credit = credit_packs + credit_base
        if day_index(charge.ts) == day_index(now):
            today_used -= credit
        base_used -= credit_base
        packs += credit_packs
        conn.execute(
            "UPDATE accounts SET pack_balance = ?, month = ?, month_used = ?, day = ?, day_used = ?"
            " WHERE key_id = ?",
            (packs, month_index(now), base_used, day_index(now), today_used, charge.key_id),
        )
        kind = "credit" if credit else "settle"
        self._ledger_row(
            conn,
            charge.key_id,
            kind,
            charge.route,
            status,
            -credit,
            -credit_base,
            -credit_packs,
            now,
        )
        return balance_of(plan, base_used, packs, today_used)

    async def balance(self, account: Account) -> Balance:
        def read(conn: sqlite3.Connection) -> Balance:
            now = self.clock() if self.clock else time.time()
            row = conn.execute(
                f"SELECT {_ACCOUNT_COLUMNS} FROM accounts WHERE key_id = ?", (account.key_id,)
            ).fetchone()
            if row is None:
                raise KeyError(account.key_id)
            return balance_of(self.config.plan(row[0]), *self._counters(row, now))

        return await self._run(read)

    # -- administration -----------------------------------------------------------------------

    async def create_key(self, plan: str, name: str = "") -> str:
        self.config.plan(plan)
        key, key_id = new_key()

        def insert(conn: sqlite3.Connection, now: float) -> None:
            conn.execute(
                "INSERT INTO accounts (key_id, key_hash, plan, name, created_at) VALUES (?, ?, ?, ?, ?)",
                (key_id, hash_key(key), plan, name, now),
            )

        await self._run(lambda conn: self._transaction(conn, lambda now: insert(conn, now)))
        return key

    async def list_keys(self) -> list[KeyRecord]:
        def query(conn: sqlite3.Connection) -> list[KeyRecord]:
            rows = conn.execute(
                "SELECT key_id, plan, name, created_at, revoked_at, pack_balance FROM accounts"
                " ORDER BY created_at, key_id"
            ).fetchall()
            return [KeyRecord(*row) for row in rows]

        return await self._run(query)

    async def revoke(self, key_id: str) -> bool:
        def update(conn: sqlite3.Connection, now: float) -> bool:
            cursor = conn.execute(
                "UPDATE accounts SET revoked_at = ? WHERE key_id = ? AND revoked_at IS NULL",
                (now, key_id),
            )
            return cursor.rowcount == 1

        revoked = await self._run(
            lambda conn: self._transaction(conn, lambda now: update(conn, now))
        )
        self._auth_cache.pop(key_id, None)
        return revoked

    async def topup(self, key_id: str, tokens: int) -> int:
        if tokens <= 0:
            raise ValueError("a top-up adds a positive number of tokens")

        def update(conn: sqlite3.Connection, now: float) -> int:
            row = conn.execute(
                "UPDATE accounts SET pack_balance = pack_balance + ? WHERE key_id = ?"
                " RETURNING pack_balance",
                (tokens, key_id),
            ).fetchone()
            if row is None:
                raise KeyError(key_id)
            self._ledger_row(conn, key_id, "topup", "", 0, 0, 0, tokens, now)
            return int(row[0])

        return await self._run(lambda conn: self._transaction(conn, lambda now: update(conn, now)))

    async def ledger(self, key_id: str, since: float = 0.0) -> list[LedgerEntry]:
        def query(conn: sqlite3.Connection) -> list[LedgerEntry]:
            rows = conn.execute(
                "SELECT key_id, kind, route, status, tokens, base_tokens, pack_tokens, ts"
                " FROM ledger WHERE key_id = ? AND ts >= ? ORDER BY id",
                (key_id, since),
            ).fetchall()
            return [LedgerEntry(*row) for row in rows]

        return await self._run(query)

    async def usage(self, key_id: str) -> Usage:
        def read(conn: sqlite3.Connection) -> tuple[str, Balance, int, float]:
            now = self.clock() if self.clock else time.time()
            row = conn.execute(
                f"SELECT {_ACCOUNT_COLUMNS} FROM accounts WHERE key_id = ?", (key_id,)
            ).fetchone()
            if row is None:
                raise KeyError(key_id)
            counters = self._counters(row, now)
            return row[0], balance_of(self.config.plan(row[0]), *counters), counters[1], now

        plan, balance, packs, now = await self._run(read)
        entries = await self.ledger(key_id, since=month_start(now))
        return summarize_usage(key_id, plan, balance, packs, entries, day_start(now))

    async def ping(self) -> float:
        started = time.perf_counter()
        await self._run(lambda conn: conn.execute("SELECT 1").fetchone())
        return (time.perf_counter() - started) * 1000

    async def close(self) -> None:
        def shut(conn: sqlite3.Connection) -> None:
            conn.close()

        if self._closed:
            return
        if self._conn is not None:
            await self._run(shut)
            self._conn = None
        self._closed = True
        self._executor.shutdown(wait=True)
