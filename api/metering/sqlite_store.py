"""SQLite metering backend: WAL, one `BEGIN IMMEDIATE` transaction per group of steps."""

from __future__ import annotations

import asyncio
import contextlib
import math
import os
import sqlite3
import stat
import time
from collections import deque
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from pathlib import Path
from typing import Any, TypeVar

from api.metering.config import MeteringConfig
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
from api.metering.store import EXPORT_SLOT, Clock, MeteringStore

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
CREATE TABLE IF NOT EXISTS ledger (
    id INTEGER PRIMARY KEY,
    key_id TEXT NOT NULL,
    kind TEXT NOT NULL,
    route TEXT NOT NULL,
    status INTEGER NOT NULL,
    tokens INTEGER NOT NULL,
    base_tokens INTEGER NOT NULL,
    pack_tokens INTEGER NOT NULL,
    ts REAL NOT NULL,
    slot TEXT
);
CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY, value INTEGER NOT NULL);
INSERT OR IGNORE INTO meta (name, value) VALUES ('revocations', 0);
"""
"""The ledger has no index but its id: rows are appended in id order, with a time that never
goes backwards. A limited plan's admit row carries its in-flight slot and its settle or credit row
the slot it frees, so the rate windows and slots are the ledger's own rows of the last 120 s."""
_ACCOUNT_COLUMNS = "plan, revoked_at, pack_balance, month, month_used, day, day_used"
_SELECT_ACCOUNT = f"SELECT {_ACCOUNT_COLUMNS} FROM accounts WHERE key_id = ?"
_UPDATE_COUNTERS = (
    "UPDATE accounts SET pack_balance = ?, month = ?, month_used = ?, day = ?, day_used = ?"
    " WHERE key_id = ?"
)
_LAST_TIME = "SELECT ts FROM ledger ORDER BY id DESC LIMIT 1"
_LAST_ROW = "SELECT id, ts FROM ledger ORDER BY id DESC LIMIT 1"
_LEDGER_COLUMNS = "key_id, kind, route, status, tokens, base_tokens, pack_tokens, ts, slot"
_INSERT_LEDGER = f"INSERT INTO ledger ({_LEDGER_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"
_TAIL = (
    "SELECT id, key_id, kind, status, tokens, base_tokens, pack_tokens, ts, slot FROM ledger"
    " WHERE id > ? ORDER BY id"
)
_FIRST_AT = "SELECT id, ts FROM ledger WHERE id >= ? ORDER BY id LIMIT 1"
_CAUGHT_UP = (
    "SELECT meta.value, ledger.id, key_id, kind, status, tokens, base_tokens, pack_tokens, ts,"
    " slot FROM meta LEFT JOIN ledger ON ledger.id > ? WHERE meta.name = 'revocations'"
    " ORDER BY ledger.id"
)
"""The revocation generation and the ledger rows appended since, in one statement: at least one
row (the generation's, with no ledger columns when nothing was appended)."""
_NEXT_GENERATION = "UPDATE meta SET value = value + 1 WHERE name = 'revocations'"
KEYS_HELD = 200_000
"""Keys whose state a process holds before it drops them all and reads the last 120 s again."""
Counters = tuple[int, int, int, int, int]
"""(pack balance, month, base used that month, day, used that day), as in the accounts row."""


class _KeyState:
    """What this process knows of one key, current as of the last transaction it caught up to.

    The counters are the accounts row's (None: read it before use); the rate window and the
    in-flight slots are built from the ledger's rows alone (each process reads every row another
    appends, `_caught_up`), so they cost the hot path no read and no write of their own.
    """

    __slots__ = ("counters", "plan", "revoked", "slots", "window")

    def __init__(self) -> None:
        self.plan = ""
        self.revoked = False
        self.counters: Counters | None = None
        self.window: deque[float] = deque()  # admit times of a limited plan, oldest first
        self.slots: dict[str, float] = {}  # in-flight slot -> when it expires

    def drawn(self, ts: float, tokens: int, base: int, packs: int) -> None:
        """An admit's (or extend's) charge at `ts`, as its step applied it to the counters."""
        if self.counters is None:
            return
        pack_balance, month, month_used, day, day_used = self.counters
        this_month, today = month_index(ts), day_index(ts)
        base_used = month_used if month == this_month else 0
        used_today = day_used if day == today else 0
        self.counters = (
            pack_balance - packs,
            this_month,
            base_used + base,
            today,
            used_today + tokens,
        )


class _Group:
    """One group transaction's state: the keys' states its steps read and change, the accounts
    rows to write back (one `UPDATE` per key) and the ledger rows to append, all before COMMIT."""

    __slots__ = ("_calendar", "conn", "dirty", "keys", "ledger", "now")

    def __init__(self, conn: sqlite3.Connection, now: float, keys: dict[str, _KeyState]) -> None:
        self.conn = conn
        self.now = now
        self.keys = keys
        self._calendar: tuple[int, int] | None = None
        self.dirty: dict[str, _KeyState] = {}
        self.ledger: list[tuple[Any, ...]] = []

    @property
    def day(self) -> int:
        return self._period()[0]

    @property
    def month(self) -> int:
        return self._period()[1]

    def _period(self) -> tuple[int, int]:
        # (day, month) of `now`, on first use: a group of record steps never needs the calendar.
        if self._calendar is None:
            self._calendar = (day_index(self.now), month_index(self.now))
        return self._calendar

    def state(self, key_id: str) -> _KeyState | None:
        """The key's state with its counters (the accounts row read when not known); None for an
        unknown key."""
        state = self.keys.get(key_id)
        if state is not None and state.counters is not None:
            return state
        row = self.conn.execute(_SELECT_ACCOUNT, (key_id,)).fetchone()
        if row is None:
            return None
        if state is None:
            state = self.keys[key_id] = _KeyState()
        state.plan, state.revoked = row[0], row[1] is not None
        state.counters = (row[2], row[3], row[4], row[5], row[6])
        return state

    def counters(self, state: _KeyState) -> tuple[int, int, int]:
        """(base used this month, pack balance, used today) at the group's `now`."""
        assert state.counters is not None
        packs, month, month_used, day, day_used = state.counters
        return (
            (month_used if month == self.month else 0),
            packs,
            (day_used if day == self.day else 0),
        )

    def set_counters(
        self, key_id: str, state: _KeyState, packs: int, base_used: int, day_used: int
    ) -> None:
        state.counters = (packs, self.month, base_used, self.day, day_used)
        self.dirty[key_id] = state

    def flush(self) -> None:
        if self.dirty:
            self.conn.executemany(
                _UPDATE_COUNTERS,
                [(*state.counters, key_id) for key_id, state in self.dirty.items()],  # type: ignore[misc]
            )
        if self.ledger:
            self.conn.executemany(_INSERT_LEDGER, self.ledger)


Step = Callable[["_Group"], Any]
"""One request's atomic step, run inside a group transaction (`group.conn`, `group.now`)."""
_Pending = tuple[Step, "asyncio.Future[Any] | None"]
"""A queued step and the future its waiter awaits (None: a `release`, which nobody awaits)."""
BUSY_RETRY_SECONDS = 0.02
"""How long the loop retries a busy write lock (once per iteration) before the thread waits."""
CHECKPOINT_EVERY = 256
"""Inline commits between two WAL checkpoints (run on the store's thread, off the loop)."""
CHECKPOINT_WAIT_MS = 0
"""How long the RESTART checkpoint waits for another connection's lock or read before it ends as a
passive one would (0: not at all; the loop's groups wait while it runs, so it must not sleep)."""
WAL_SIZE_LIMIT = 16 * 1024 * 1024
"""Bytes a WAL file is trimmed to when it restarts (it grows past this only between restarts)."""
THREAD_BUSY_TIMEOUT_MS = 5000
THREAD_BUSY_SLEEP = 0.0001
"""Seconds the store's thread sleeps between two tries of a busy write lock for a group."""
"""How long the store's thread waits for a busy lock (a group handed off, an admin call)."""


class _LockBusyError(Exception):
    """The inline connection found the write lock held by another process (it never waits)."""


LEDGER_MODE = 0o600
"""The ledger holds every key's hash and spending: readable by the service's user alone. SQLite
creates its `-wal` and `-shm` files with the database file's mode."""


def private_file(path: Path) -> None:
    """Create `path` readable and writable by its owner only, or take others' access away from an
    existing one (a file an older release made 0644).

    An existing file is never opened here: closing any descriptor of a database file drops every
    POSIX lock this process's SQLite connections hold on it. Only a file that did not exist (so
    that no connection can hold it) is created with a descriptor of its own."""
    try:
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, LEDGER_MODE)
    except FileExistsError:
        for held in (path, path.with_name(path.name + "-wal"), path.with_name(path.name + "-shm")):
            with contextlib.suppress(FileNotFoundError):
                if stat.S_IMODE(held.stat().st_mode) & 0o077:
                    held.chmod(LEDGER_MODE)
    else:
        os.close(descriptor)


class SqliteMeteringStore(MeteringStore):
    """Group commit on the event loop's own thread; processes share the file (WAL).

    Admits and settles queue their step and await it; once per event-loop iteration the queue runs
    as ONE `BEGIN IMMEDIATE ... COMMIT` on the loop's thread, and each step's future is resolved
    only after the COMMIT. Every step is atomic and durable (WAL, `synchronous=NORMAL`: survives a
    killed process) before its request goes on; one transaction serves every request of that
    iteration, and no thread hop or lock handoff sits on the hot path.

    The limits are decided on state held in memory: every key's rate window and slots (the
    ledger's rows) and the counters of the keys in use (their accounts rows), brought up to the
    file at the start of each group, under the write lock (`_caught_up`).

    The loop never waits for a lock: when another process holds the write lock, the group goes to
    the store's thread, which waits for it, and later groups follow it there in order until it is
    done. The thread also runs the WAL checkpoints and the administration calls. A store serves
    one event loop at a time (a server worker's).
    """

    def __init__(self, path: Path, config: MeteringConfig, clock: Clock | None = None) -> None:
        super().__init__(config, clock)
        self.path = path
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="metering-sqlite")
        self._conn: sqlite3.Connection | None = None  # the thread's: waits for a busy lock
        self._inline_conn: sqlite3.Connection | None = None  # the loop's: never waits
        self._closed = False
        self._pending: list[_Pending] = []
        self._flush_scheduled = False
        self._loop: asyncio.AbstractEventLoop | None = None  # the loop of the scheduled flush
        self._handed_off = 0  # groups on the thread (lock was busy): later groups follow them
        self._busy_since: float | None = None  # when the loop first found the lock busy
        self._commits = 0
        self._checkpointing = False
        self._restarting = False
        # What this process knows of the keys, caught up under the write lock at every group
        # (`_caught_up`): the rows of the ledger up to `_last_id` and the revocation generation.
        self._keys: dict[str, _KeyState] = {}
        self._loaded = False  # False: read the last 120 s of the ledger again first
        self._last_id = 0
        self._last_ts = 0.0  # the newest ledger row's time: the clock never goes before it
        self._generation = -1

    # -- plumbing -----------------------------------------------------------------------------

    def _open(self, busy_timeout: float, autocheckpoint: bool) -> sqlite3.Connection:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        private_file(self.path)
        conn = sqlite3.connect(
            self.path, isolation_level=None, timeout=busy_timeout, check_same_thread=False
        )
        try:
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
            conn.execute(f"PRAGMA journal_size_limit={WAL_SIZE_LIMIT}")
            if not autocheckpoint:
                conn.execute("PRAGMA wal_autocheckpoint=0")
            conn.executescript(SCHEMA)  # writes on a new file: takes the lock
        except BaseException:
            conn.close()
            raise
        return conn

    def _connection(self) -> sqlite3.Connection:
        if self._conn is None:
            self._conn = self._open(busy_timeout=THREAD_BUSY_TIMEOUT_MS / 1000, autocheckpoint=True)
        return self._conn

    def _inline_connection(self) -> sqlite3.Connection:
        """The loop's connection; `_LockBusyError` while another process holds the write lock."""
        if self._inline_conn is None:
            try:
                self._inline_conn = self._open(busy_timeout=0.0, autocheckpoint=False)
            except sqlite3.OperationalError as exc:
                if _is_busy(exc):
                    raise _LockBusyError from exc
                raise
        return self._inline_conn

    async def _run(self, fn: Callable[[sqlite3.Connection], T], *, after_steps: bool = False) -> T:
        """`fn` on the store's thread; `after_steps`: after every step this process queued before
        the call (a released settle among them), for a read of what steps write (the ledger, a
        balance). Not for a key's lookup, which steps never change: handing the queue to the
        thread costs its groups their inline commit until the thread has caught up."""

        def call() -> T:
            conn = self._connection()
            return fn(conn)

        if after_steps and self._pending:
            batch, self._pending = self._pending, []
            self._hand_off(batch)
        try:
            return await asyncio.get_running_loop().run_in_executor(self._executor, call)
        except (sqlite3.Error, OSError) as exc:  # fail closed on any store error
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

    def _grouped(self, step: Step) -> asyncio.Future[Any]:
        """Queue `step` for this loop iteration's group; a future of its result once that group
        commits (a store failure: `MeteringUnavailableError`). A plain function, not a coroutine:
        the hot path awaits the future itself."""
        if self._closed:
            raise MeteringUnavailableError("metering store: closed")
        loop = self._loop_here()
        future: asyncio.Future[Any] = loop.create_future()
        self._queue(step, future, loop)
        return future

    def _loop_here(self) -> asyncio.AbstractEventLoop:
        """The running loop. While a flush is scheduled, the loop it is scheduled on (a store
        serves one loop at a time): asking asyncio costs a `getpid` system call, which under the
        server took several per cent of the loop thread's samples."""
        loop = self._loop
        if self._flush_scheduled and loop is not None:
            return loop
        return asyncio.get_running_loop()

    def _queue(
        self, step: Step, future: asyncio.Future[Any] | None, loop: asyncio.AbstractEventLoop
    ) -> None:
        self._pending.append((step, future))
        if not self._flush_scheduled:
            self._flush_scheduled = True
            self._loop = loop
            loop.call_soon(self._flush)

    def _flush(self) -> None:
        """On the loop: commit every step queued since the last flush, inline when the lock is free."""
        self._flush_scheduled = False
        batch, self._pending = self._pending, []
        if not batch:
            return
        if self._handed_off:  # keep the order: this group follows the ones on the thread
            self._hand_off(batch)
            return
        if self._restarting:
            # The thread's RESTART checkpoint is not raced for the write lock by this loop's own
            # commits, so it completes (the WAL then restarts): the group waits for it on the
            # loop's next iterations, as for a busy lock, without sleeping in SQLite.
            self._retry_next_iteration(batch)
            return
        try:
            outcomes = self._commit_group(self._inline_connection(), batch, wait=False)
        except _LockBusyError:
            self._lock_busy(batch)
            return
        except (sqlite3.Error, OSError) as exc:  # the file cannot be opened: nothing committed
            outcomes = [(False, exc)] * len(batch)
        self._busy_since = None
        _resolve(
            [(future, ok, value) for (_, future), (ok, value) in zip(batch, outcomes, strict=True)]
        )
        self._commits += 1
        if self._commits >= CHECKPOINT_EVERY and not self._checkpointing:
            self._checkpoint()

    def _lock_busy(self, batch: list[_Pending]) -> None:
        """Another process holds the write lock: try again on the next loop iteration (steps
        queued meanwhile join the group), for up to `BUSY_RETRY_SECONDS`; then the store's thread
        waits for the lock instead.

        Another worker's group commit holds the lock for tens of µs, while SQLite's own busy
        handler sleeps at least 1 ms a try: retrying on the loop keeps a contended commit at
        about a loop iteration. A lock held longer (an administration call, another tool) goes
        to the thread, so the loop does not spin on it.
        """
        now = time.monotonic()
        if self._busy_since is None:
            self._busy_since = now
        if now - self._busy_since < BUSY_RETRY_SECONDS:
            self._retry_next_iteration(batch)
            return
        self._busy_since = None
        self._hand_off(batch)

    def _retry_next_iteration(self, batch: list[_Pending]) -> None:
        """Put `batch` back ahead of the steps queued meanwhile; flush again next iteration."""
        self._pending = batch + self._pending
        self._flush_scheduled = True
        loop = self._loop = asyncio.get_running_loop()
        loop.call_soon(self._flush)

    def _hand_off(self, batch: list[_Pending]) -> None:
        """Commit `batch` on the store's thread, which waits for the lock; resolve on the loop."""
        loop = asyncio.get_running_loop()

        def commit() -> None:
            outcomes = self._commit_waiting(batch)
            resolved = [
                (future, ok, value)
                for (_, future), (ok, value) in zip(batch, outcomes, strict=True)
            ]
            with contextlib.suppress(RuntimeError):  # that loop has closed: nobody is waiting
                loop.call_soon_threadsafe(self._handed_back, resolved)

        self._handed_off += 1
        try:
            self._executor.submit(commit)
        except RuntimeError as exc:  # closed
            self._handed_off -= 1
            failed = MeteringUnavailableError(f"metering store: {exc}")
            _resolve([(future, False, failed) for _, future in batch])

    def _commit_waiting(self, batch: list[_Pending]) -> list[tuple[bool, Any]]:
        """On the store's thread: commit `batch`, trying the write lock again every
        `THREAD_BUSY_SLEEP` seconds for up to the busy timeout.

        Not SQLite's own busy handler: it sleeps 1, 2, 5, 10 ms and longer between tries, and
        under two workers' steady commits (each holds the lock for a fraction of a millisecond)
        the other worker, which tries on every loop iteration, took the lock nearly every time:
        a group handed here waited up to 800 ms (the p99 of a two-worker run).
        """
        conn = self._connection()
        deadline = time.monotonic() + THREAD_BUSY_TIMEOUT_MS / 1000
        conn.execute("PRAGMA busy_timeout=0")
        try:
            while True:
                try:
                    return self._commit_group(conn, batch, wait=False)
                except _LockBusyError as busy:
                    if time.monotonic() >= deadline:
                        return [(False, busy.__cause__)] * len(batch)
                    time.sleep(THREAD_BUSY_SLEEP)
        finally:
            conn.execute(f"PRAGMA busy_timeout={THREAD_BUSY_TIMEOUT_MS}")

    def _handed_back(self, resolved: list[tuple[Any, bool, Any]]) -> None:
        self._handed_off -= 1
        _resolve(resolved)

    def _checkpoint(self) -> None:
        """Two checkpoints on the thread (off the loop), so the WAL is written from its start again
        instead of growing for as long as commits keep coming.

        A passive checkpoint never completes under steady load (a commit lands while it copies),
        and SQLite restarts the WAL only after a complete one: under the bench's load the WAL grew
        by about 40 MB a second, 875 MB in 16 s with two workers. So a passive checkpoint first
        syncs the WAL and copies its pages while writers go on; then a RESTART, which holds new
        writers off, copies what landed meanwhile (about 1.5 ms at the median with two workers,
        against about 4 ms for a RESTART alone, mostly the WAL's sync). During the RESTART this
        loop's groups wait on its next iterations (never sleeping in SQLite); other processes'
        commits retry as for any busy lock. When another process holds the lock or an old read,
        the RESTART does not wait (`CHECKPOINT_WAIT_MS`): it ends as a passive one would and the
        next one tries again; `journal_size_limit` trims a WAL that grew meanwhile once it
        restarts.
        """

        def run() -> None:
            try:
                with contextlib.suppress(sqlite3.Error):
                    conn = self._connection()
                    conn.execute(f"PRAGMA busy_timeout={CHECKPOINT_WAIT_MS}")
                    try:
                        conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
                        self._restarting = True
                        try:
                            conn.execute("PRAGMA wal_checkpoint(RESTART)").fetchone()
                        finally:
                            self._restarting = False
                    finally:
                        conn.execute(f"PRAGMA busy_timeout={THREAD_BUSY_TIMEOUT_MS}")
            finally:
                self._checkpointing = False

        self._commits = 0
        self._checkpointing = True
        try:
            self._executor.submit(run)
        except RuntimeError:  # closed
            self._checkpointing = False

    def _commit_group(
        self, conn: sqlite3.Connection, batch: list[_Pending], wait: bool
    ) -> list[tuple[bool, Any]]:
        """Run the steps in one BEGIN IMMEDIATE transaction: [(ok, result or exception)].

        `wait=False` (the inline connection): a held write lock raises `_LockBusyError`, nothing ran.
        An SQLite or OS error fails the whole group (nothing committed: the store is unavailable).
        Any other exception in a step rolls the group back and runs each step again in its own
        transaction, so that step fails alone (nothing was committed or answered before: steps
        are functions of the stored state and `now`, safe to run again). No savepoints on the
        common path.
        """
        try:
            conn.execute("BEGIN IMMEDIATE")
        except sqlite3.OperationalError as exc:
            if not wait and _is_busy(exc):
                raise _LockBusyError from exc
            return [(False, exc)] * len(batch)
        except Exception as exc:
            return [(False, exc)] * len(batch)
        try:
            group = _Group(conn, self._caught_up(conn), self._keys)
            outcomes: list[tuple[bool, Any]] = [(True, step(group)) for step, _ in batch]
            group.flush()
            if group.ledger:
                (last_id,) = conn.execute("SELECT last_insert_rowid()").fetchone()
            conn.execute("COMMIT")
        except Exception as exc:
            # The steps changed this process's key states; uncommitted, they are read again.
            self._loaded = False
            if conn.in_transaction:
                with contextlib.suppress(sqlite3.Error):
                    conn.execute("ROLLBACK")
            if len(batch) == 1 or isinstance(exc, sqlite3.OperationalError | OSError):
                return [(False, exc)] * len(batch)
            return [self._commit_group(conn, [pending], wait=True)[0] for pending in batch]
        if group.ledger:
            self._last_id, self._last_ts = last_id, group.now
        return outcomes

    def _caught_up(self, conn: sqlite3.Connection) -> float:
        """Under the write lock: bring this process's key states up to the file (every ledger row
        another connection appended since this one's last, and the revocation generation);
        returns the group's `now`.

        One clock, never backwards across processes: never before the newest ledger row. Rows are
        written under the write lock, so after the catch-up the newest row is known here.
        """
        if not self._loaded or len(self._keys) > KEYS_HELD:
            self._load(conn)
        rows = conn.execute(_CAUGHT_UP, (self._last_id,)).fetchall()
        generation = rows[0][0]
        if rows[0][1] is not None:
            for row in rows:
                self._apply(row[1:])
        if generation != self._generation:  # a key was revoked: every key's row is read again
            self._generation = generation
            for state in self._keys.values():
                state.counters = None
        now = self.clock() if self.clock else time.time()
        return now if now >= self._last_ts else self._last_ts

    def _load(self, conn: sqlite3.Connection) -> None:
        """Every key's rate window and slots from the ledger's rows young enough to matter (the
        longer of the rate window and the request timeout); counters are read per key on use."""
        self._keys = {}
        self._last_id, self._last_ts = conn.execute(_LAST_ROW).fetchone() or (0, 0.0)
        limits = self.config.limits
        horizon = max(limits.window_seconds, limits.request_timeout_seconds)
        now = self.clock() if self.clock else time.time()
        start = _first_id_at(conn, now - horizon, self._last_id)
        for row in conn.execute(_TAIL, (start - 1,)):
            self._apply(row)
        self._loaded = True

    def _apply(self, row: tuple[Any, ...]) -> None:
        """A ledger row another connection wrote (or one read at load) applied to its key."""
        row_id, key_id, kind, status, tokens, base, packs, ts, slot = row
        self._last_id = row_id
        if ts > self._last_ts:
            self._last_ts = ts
        state = self._keys.get(key_id)
        if state is None:
            state = self._keys[key_id] = _KeyState()
        if slot is not None:
            if kind == "charge":
                state.window.append(ts)
                state.slots[slot] = ts + self.config.limits.request_timeout_seconds
            else:
                state.slots.pop(slot, None)
        if kind == "charge":
            if (
                status == 0
            ):  # an admit's or extend's charge (a record's has its status: no counters)
                state.drawn(ts, tokens, base, packs)
        elif kind != "settle":  # a credit or a top-up: its row is read again on use
            state.counters = None

    def _now(self, conn: sqlite3.Connection) -> float:
        # One clock, never backwards across processes: never before the newest ledger row. Rows
        # are written under the write lock with this `now`, so the last row by id holds the
        # newest time any transaction used; reading it writes no page (a clock row would).
        now = self.clock() if self.clock else time.time()
        row = conn.execute(_LAST_TIME).fetchone()
        return now if row is None or row[0] <= now else float(row[0])

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

    def admit(self, account: Account, route: str, cost: int) -> asyncio.Future[Admission]:
        # A plain function: the request awaits its group's future itself (no coroutine), and the
        # step is a partial (no Python frame of its own).
        slot_id = self.new_slot(route)
        return self._grouped(partial(self._admit_step, account, route, cost, slot_id))

    def _admit_step(
        self, account: Account, route: str, cost: int, slot: str, group: _Group
    ) -> Admission:
        return self._admit(group, account, route, cost, slot)

    async def _draw(self, account: Account, route: str, cost: int) -> Admission:
        admission: Admission = await self._grouped(
            lambda group: self._admit(group, account, route, cost, "", limits=False)
        )
        return admission

    def _admit(
        self,
        group: _Group,
        account: Account,
        route: str,
        cost: int,
        slot: str,
        *,
        limits: bool = True,
    ) -> Admission:
        """Revocation, the plan's limits (unless `limits` is false: an `extend`), the budget."""
        now = group.now
        state = group.state(account.key_id)
        if state is None or state.revoked:
            return Admission(Outcome.UNAUTHORIZED)
        plan = self.config.plan(state.plan)
        limited = plan.limited and limits
        base_used, packs, today_used = group.counters(state)
        if limited:
            refused = self._check_limits(state, now, slot)
            if refused is not None:
                balance = balance_of(plan, base_used, packs, today_used)
                return Admission(refused[0], balance, retry_after=refused[1])
        drawn = draw(plan, cost, base_used, packs, today_used)
        if isinstance(drawn, Outcome):
            return Admission(drawn, balance_of(plan, base_used, packs, today_used))
        from_base, from_packs = drawn
        if limited:
            state.window.append(now)
            state.slots[slot] = now + self.config.limits.request_timeout_seconds
        group.set_counters(
            account.key_id, state, packs - from_packs, base_used + from_base, today_used + cost
        )
        row_slot = slot if limited else None
        group.ledger.append(
            (account.key_id, "charge", route, 0, cost, from_base, from_packs, now, row_slot)
        )
        charge = Charge(account.key_id, route, slot, cost, from_base, from_packs, now)
        after = balance_of(plan, base_used + from_base, packs - from_packs, today_used + cost)
        return Admission(Outcome.ADMITTED, after, charge)

    def _check_limits(self, state: _KeyState, now: float, slot: str) -> tuple[Outcome, int] | None:
        """The sliding window (admits younger than the window), then the in-flight slots, then
        (for an export's `slot`) the exports among them."""
        limits = self.config.limits
        window = state.window
        while window and window[0] <= now - limits.window_seconds:
            window.popleft()
        if len(window) >= limits.requests_per_window:
            wait = math.ceil(window[0] + limits.window_seconds - now)
            return Outcome.RATE_LIMITED, max(1, wait)
        slots = state.slots
        if len(slots) >= limits.concurrent:
            for slot, expires in list(slots.items()):
                if expires <= now:  # a crashed worker's slot
                    del slots[slot]
            if len(slots) >= limits.concurrent:
                return Outcome.TOO_MANY_IN_FLIGHT, 1
        if slot.startswith(EXPORT_SLOT):
            exports = [
                held
                for held, expires in slots.items()
                if expires > now and held.startswith(EXPORT_SLOT)
            ]
            if len(exports) >= limits.concurrent_exports:
                return Outcome.TOO_MANY_EXPORTS, 1
        return None

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
        conn.execute(_INSERT_LEDGER, (key_id, kind, route, status, tokens, base, packs, ts, None))

    async def settle(
        self, charge: Charge, status: int, final: int | None = None
    ) -> tuple[int, Balance]:
        net = net_cost(status, charge.tokens, final)
        balance: Balance = await self._grouped(
            lambda group: self._settle(group, charge, net, status)
        )
        return net, balance

    def _settle(self, group: _Group, charge: Charge, net: int, status: int) -> Balance:
        now = group.now
        state = group.state(charge.key_id)
        assert state is not None  # keys are never deleted
        plan = self.config.plan(state.plan)
        # Every settle row names the charge's slot (one that an unlimited plan's admit never took
        # frees nothing), so that every process frees it when it reads the row.
        slot = charge.slot_id
        state.slots.pop(slot, None)
        base_used, packs, today_used = group.counters(state)
        credit_packs, credit_base = split_credit(charge, net)
        if credit_packs == 0 and credit_base == 0:
            # Net equals the up-front charge (every 2xx of a fixed-cost route): the counters
            # stand as the admit left them (a period reset reads the same either way), so the
            # settle is the slot release and its `settle 0` ledger row.
            group.ledger.append((charge.key_id, "settle", charge.route, status, 0, 0, 0, now, slot))
            return balance_of(plan, base_used, packs, today_used)
        same_month = month_index(charge.ts) == month_index(now)
        if not same_month:
            credit_base = 0  # the base it came from has reset; nothing to give back
        credit = credit_packs + credit_base
        if day_index(charge.ts) == day_index(now):
            today_used -= credit
        base_used -= credit_base
        packs += credit_packs
        group.set_counters(charge.key_id, state, packs, base_used, today_used)
        kind = "credit" if credit else "settle"
        group.ledger.append(
            (
                charge.key_id,
                kind,
                charge.route,
                status,
                -credit,
                -credit_base,
                -credit_packs,
                now,
                slot,
            )
        )
        return balance_of(plan, base_used, packs, today_used)

    def release(self, charge: Charge, status: int) -> None:
        if self._closed:  # the slot expires after the request timeout; the charge is the net
            return
        self._queue(partial(self._release, charge, status), None, self._loop_here())

    def _release(self, charge: Charge, status: int, group: _Group) -> None:
        """`settle` with nothing to credit, read by nobody: the slot and its `settle 0` row only
        (no accounts row is read or written)."""
        state = self._keys.get(charge.key_id)
        if state is not None:
            state.slots.pop(charge.slot_id, None)
        group.ledger.append(
            (charge.key_id, "settle", charge.route, status, 0, 0, 0, group.now, charge.slot_id)
        )

    def record(
        self, account: Account, route: str, status: int, tokens: int
    ) -> asyncio.Future[Balance | None]:
        # A partial, not a lambda: the group calls it without a Python frame of its own.
        return self._grouped(partial(self._record, account.key_id, route, status, tokens))

    def _record(
        self, key_id: str, route: str, status: int, tokens: int, group: _Group
    ) -> Balance | None:
        state = group.state(key_id)
        if state is None or state.revoked:
            return None
        # No budget: the whole cost is drawn from the base, as an admit would draw it; the
        # account's period counters are not kept (no balance reads them), so the ledger row is
        # the step's only write.
        group.ledger.append((key_id, "charge", route, status, tokens, tokens, 0, group.now, None))
        return UNLIMITED_BALANCE

    async def balance(self, account: Account) -> Balance:
        def read(conn: sqlite3.Connection) -> Balance:
            now = self.clock() if self.clock else time.time()
            row = conn.execute(
                f"SELECT {_ACCOUNT_COLUMNS} FROM accounts WHERE key_id = ?", (account.key_id,)
            ).fetchone()
            if row is None:
                raise KeyError(account.key_id)
            return balance_of(self.config.plan(row[0]), *self._counters(row, now))

        return await self._run(read, after_steps=True)

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
            if cursor.rowcount != 1:
                return False
            # Every process reads the generation in each group and then every key's row again:
            # the revoked key is refused from its next step on, in every worker.
            conn.execute(_NEXT_GENERATION)
            return True

        revoked = await self._run(
            lambda conn: self._transaction(conn, lambda now: update(conn, now))
        )
        self._forget(key_id)
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
            # No per-key index (it cost the hot path a page written at random per row): the
            # rows from `since` on are read in id order and filtered by key.
            start = _first_id_at(conn, since) if since > 0 else 0
            rows = conn.execute(
                "SELECT key_id, kind, route, status, tokens, base_tokens, pack_tokens, ts"
                " FROM ledger WHERE id >= ? AND key_id = ? ORDER BY id",
                (start, key_id),
            ).fetchall()
            return [LedgerEntry(*row) for row in rows]

        return await self._run(query, after_steps=True)

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

        plan, balance, packs, now = await self._run(read, after_steps=True)
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
        self._flush()  # steps queued this iteration commit before the connections close
        if self._conn is not None:
            await self._run(shut)  # after every group handed to the thread (FIFO)
            self._conn = None
        self._closed = True
        self._executor.shutdown(wait=True)
        if self._inline_conn is not None:
            self._inline_conn.close()
            self._inline_conn = None


def _is_busy(exc: sqlite3.OperationalError) -> bool:
    """SQLITE_BUSY: another connection holds the lock (the only error worth waiting out)."""
    return getattr(exc, "sqlite_errorcode", None) == sqlite3.SQLITE_BUSY


def _resolve(resolved: list[tuple[Any, bool, Any]]) -> None:
    """On the event loop: hand each committed step's result (or failure) to its waiter; a store
    error (SQLite, OS) reaches it as `MeteringUnavailableError` (fail closed)."""
    for future, ok, value in resolved:
        # None: a released settle, awaited by nobody. Done: the waiter was cancelled. Its step
        # ran (and committed) regardless.
        if future is None or future.done():
            continue
        if ok:
            future.set_result(value)
        elif isinstance(value, sqlite3.Error | OSError):
            failure = MeteringUnavailableError(f"metering store: {value}")
            failure.__cause__ = value
            future.set_exception(failure)
        else:
            future.set_exception(value)


def _first_id_at(conn: sqlite3.Connection, ts: float, last_id: int | None = None) -> int:
    """The id of the first ledger row at or after `ts` (one past the last when none is): a binary
    search on the id, since the ledger's time never goes backwards as its id grows."""
    if last_id is None:
        last = conn.execute(_LAST_ROW).fetchone()
        last_id = 0 if last is None else int(last[0])
    low, high = 1, last_id + 1  # the answer lies in [low, high]
    while low < high:
        middle = (low + high) // 2
        found = conn.execute(_FIRST_AT, (middle,)).fetchone()
        if found is None or found[1] >= ts:
            high = middle if found is None else min(middle, int(found[0]))
        else:
            low = int(found[0]) + 1
    return low
