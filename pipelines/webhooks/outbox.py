"""The durable outbox (SQLite): events, one delivery row per matching subscription, dead letters."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from pipelines.webhooks.config import Subscription
from pipelines.webhooks.events import Event

# Deliveries move pending -> in_flight (claimed with a lease) -> delivered, or back to pending with
# a later next_attempt_at, or to dead_letters. A worker that dies while a delivery is in flight
# leaves a lease that expires; the next worker takes the delivery over (at-least-once).
_SCHEMA = """
CREATE TABLE IF NOT EXISTS events (
    id TEXT PRIMARY KEY,
    type TEXT NOT NULL,
    occurred_at TEXT NOT NULL,
    recorded_at REAL NOT NULL,
    body BLOB NOT NULL
);
CREATE TABLE IF NOT EXISTS deliveries (
    event_id TEXT NOT NULL REFERENCES events(id),
    subscription_id TEXT NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('pending', 'in_flight', 'delivered')),
    attempts INTEGER NOT NULL DEFAULT 0,
    next_attempt_at REAL NOT NULL,
    lease_until REAL,
    last_status INTEGER,
    last_error TEXT,
    delivered_at REAL,
    PRIMARY KEY (event_id, subscription_id)
);
CREATE INDEX IF NOT EXISTS deliveries_due ON deliveries (status, next_attempt_at);
CREATE TABLE IF NOT EXISTS dead_letters (
    event_id TEXT NOT NULL REFERENCES events(id),
    subscription_id TEXT NOT NULL,
    attempts INTEGER NOT NULL,
    last_status INTEGER,
    last_error TEXT NOT NULL,
    dead_at REAL NOT NULL,
    PRIMARY KEY (event_id, subscription_id)
);
CREATE TABLE IF NOT EXISTS state (
    key TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS rate_limits (
    subscription_id TEXT PRIMARY KEY,
    last_sent REAL NOT NULL
);
"""


def matches(sub: Subscription, event: Event) -> bool:
    """Whether `sub` wants `event`: type, market, strategy, and symbols and/or keywords."""
    if not sub.enabled or not sub.wants(event.type):
        return False
    if sub.markets and event.market not in sub.markets:
        return False
    if sub.strategies and event.strategy is not None and event.strategy not in sub.strategies:
        return False
    if not sub.symbols and not sub.keywords:
        return True
    by_symbol = bool(sub.symbols) and any(s in sub.symbols for s in event.symbols)
    by_keyword = bool(sub.keywords) and any(k in event.text for k in sub.keywords)
    return by_symbol or by_keyword


@dataclass(frozen=True)
class Claimed:
    """A delivery a worker holds the lease of, with the event body to send."""

    event_id: str
    event_type: str
    subscription_id: str
    attempts: int
    """Attempts made before this one."""
    body: bytes


@dataclass(frozen=True)
class DeliveryRow:
    event_id: str
    event_type: str
    subscription_id: str
    status: str
    attempts: int
    next_attempt_at: float
    last_status: int | None
    last_error: str | None


@dataclass(frozen=True)
class DeadLetter:
    event_id: str
    event_type: str
    subscription_id: str
    attempts: int
    last_status: int | None
    last_error: str
    dead_at: float


class Outbox:
    """One SQLite outbox file; safe to open from several processes (WAL, immediate transactions)."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self._db = sqlite3.connect(path, timeout=30.0, isolation_level=None)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=FULL")
        self._db.executescript(_SCHEMA)

    def close(self) -> None:
        self._db.close()

    @contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        self._db.execute("BEGIN IMMEDIATE")
        try:
            yield self._db
        except BaseException:
            self._db.execute("ROLLBACK")
            raise
        self._db.execute("COMMIT")

    def record(
        self,
        events: Iterable[Event],
        subscriptions: Sequence[Subscription],
        now: float,
        deliver: bool = True,
    ) -> int:
        """Store events not seen before and queue them for matching subscriptions; return how many were new.

        An event id already in the outbox is skipped whole, so re-deriving emits nothing twice and a
        subscription added later is not sent the history. `deliver=False` records without queueing
        (the baseline of a first derivation).
        """
        new = 0
        with self._transaction() as db:
            for event in events:
                inserted = db.execute(
                    "INSERT OR IGNORE INTO events VALUES (?, ?, ?, ?, ?)",
                    (event.id, event.type, event.occurred_at, now, event.body),
                ).rowcount
                if not inserted:
                    continue
                new += 1
                if deliver:
                    db.executemany(
                        "INSERT INTO deliveries (event_id, subscription_id, status, next_attempt_at)"
                        " VALUES (?, ?, 'pending', ?)",
                        [(event.id, s.id, now) for s in subscriptions if matches(s, event)],
                    )
        return new

    def enqueue(self, event: Event, subscription_id: str, now: float) -> None:
        """Store `event` (if new) and queue it for one subscription (the `test` command)."""
        with self._transaction() as db:
            db.execute(
                "INSERT OR IGNORE INTO events VALUES (?, ?, ?, ?, ?)",
                (event.id, event.type, event.occurred_at, now, event.body),
            )
            db.execute(
                "INSERT OR REPLACE INTO deliveries (event_id, subscription_id, status, next_attempt_at)"
                " VALUES (?, ?, 'pending', ?)",
                (event.id, subscription_id, now),
            )

    def claim(self, now: float, lease_seconds: float, skip: Sequence[str] = ()) -> Claimed | None:
        """Take the lease of the most overdue delivery (pending and due, or in flight past its lease)."""
        excluded = ",".join("?" for _ in skip)
        where_skip = f"AND d.subscription_id NOT IN ({excluded})" if skip else ""
        with self._transaction() as db:
            row = db.execute(
                "SELECT d.event_id, e.type, d.subscription_id, d.attempts, e.body"
                " FROM deliveries d JOIN events e ON e.id = d.event_id"
                " WHERE ((d.status = 'pending' AND d.next_attempt_at <= ?)"
                "   OR (d.status = 'in_flight' AND d.lease_until <= ?))"
                f" {where_skip}"
                " ORDER BY d.next_attempt_at, d.rowid LIMIT 1",
                (now, now, *skip),
            ).fetchone()
            if row is None:
                return None
            db.execute(
                "UPDATE deliveries SET status = 'in_flight', lease_until = ?"
                " WHERE event_id = ? AND subscription_id = ?",
                (now + lease_seconds, row[0], row[2]),
            )
        return Claimed(row[0], row[1], row[2], row[3], row[4])

    def take_slot(self, subscription_id: str, now: float, interval: float) -> float | None:
        """Take the subscription's send slot at `now` (None) unless its last send is less than
        `interval` ago: then the instant the next slot opens. One transaction, so the rate limit
        holds across every worker process on this outbox, not per process."""
        with self._transaction() as db:
            row = db.execute(
                "SELECT last_sent FROM rate_limits WHERE subscription_id = ?", (subscription_id,)
            ).fetchone()
            if row is not None and row[0] + interval > now:
                return float(row[0]) + interval
            db.execute("INSERT OR REPLACE INTO rate_limits VALUES (?, ?)", (subscription_id, now))
        return None

    def delivered(self, claimed: Claimed, status: int, now: float) -> None:
        self._update(
            claimed,
            "status = 'delivered', attempts = attempts + 1, last_status = ?, last_error = NULL,"
            " delivered_at = ?, lease_until = NULL",
            (status, now),
        )

    def retry_later(
        self, claimed: Claimed, at: float, status: int | None, error: str, count: bool = True
    ) -> None:
        """Back to pending until `at`; `count=False` (rate limited) does not use up an attempt."""
        self._update(
            claimed,
            f"status = 'pending', attempts = attempts + {int(count)}, next_attempt_at = ?,"
            " last_status = ?, last_error = ?, lease_until = NULL",
            (at, status, error),
        )

    def dead_letter(self, claimed: Claimed, status: int | None, error: str, now: float) -> None:
        """Move the delivery to dead_letters (its attempt counted)."""
        with self._transaction() as db:
            db.execute(
                "INSERT OR REPLACE INTO dead_letters VALUES (?, ?, ?, ?, ?, ?)",
                (
                    claimed.event_id,
                    claimed.subscription_id,
                    claimed.attempts + 1,
                    status,
                    error,
                    now,
                ),
            )
            db.execute(
                "DELETE FROM deliveries WHERE event_id = ? AND subscription_id = ?",
                (claimed.event_id, claimed.subscription_id),
            )

    def _update(self, claimed: Claimed, assignments: str, values: tuple[object, ...]) -> None:
        with self._transaction() as db:
            db.execute(
                f"UPDATE deliveries SET {assignments} WHERE event_id = ? AND subscription_id = ?",
                (*values, claimed.event_id, claimed.subscription_id),
            )

    def replay(
        self,
        now: float,
        subscription_id: str | None = None,
        event_ids: Sequence[str] = (),
    ) -> int:
        """Move dead letters (of one subscription and/or some events; all when neither) back to pending."""
        clauses, params = _filter(subscription_id, event_ids)
        with self._transaction() as db:
            rows = db.execute(
                f"SELECT event_id, subscription_id FROM dead_letters {clauses}", params
            ).fetchall()
            db.executemany(
                "INSERT OR REPLACE INTO deliveries (event_id, subscription_id, status, next_attempt_at)"
                " VALUES (?, ?, 'pending', ?)",
                [(e, s, now) for e, s in rows],
            )
            db.executemany(
                "DELETE FROM dead_letters WHERE event_id = ? AND subscription_id = ?", rows
            )
        return len(rows)

    def dead_letters(self, subscription_id: str | None = None) -> list[DeadLetter]:
        clauses, params = _filter(subscription_id, ())
        rows = self._db.execute(
            "SELECT x.event_id, e.type, x.subscription_id, x.attempts, x.last_status,"
            " x.last_error, x.dead_at FROM dead_letters x JOIN events e ON e.id = x.event_id"
            f" {clauses.replace('subscription_id', 'x.subscription_id')} ORDER BY x.dead_at",
            params,
        ).fetchall()
        return [DeadLetter(*r) for r in rows]

    def deliveries(self, subscription_id: str | None = None) -> list[DeliveryRow]:
        clauses, params = _filter(subscription_id, ())
        rows = self._db.execute(
            "SELECT d.event_id, e.type, d.subscription_id, d.status, d.attempts,"
            " d.next_attempt_at, d.last_status, d.last_error"
            " FROM deliveries d JOIN events e ON e.id = d.event_id"
            f" {clauses.replace('subscription_id', 'd.subscription_id')} ORDER BY d.rowid",
            params,
        ).fetchall()
        return [DeliveryRow(*r) for r in rows]

    def next_due(self) -> float | None:
        """The earliest instant a queued delivery becomes due (None when nothing is queued)."""
        row = self._db.execute(
            "SELECT min(CASE status WHEN 'pending' THEN next_attempt_at ELSE lease_until END)"
            " FROM deliveries WHERE status != 'delivered'"
        ).fetchone()
        return None if row[0] is None else float(row[0])

    def event_count(self) -> int:
        return int(self._db.execute("SELECT count(*) FROM events").fetchone()[0])

    def get_state(self, key: str) -> str | None:
        row = self._db.execute("SELECT value FROM state WHERE key = ?", (key,)).fetchone()
        return None if row is None else str(row[0])

    def set_states(self, values: dict[str, str]) -> None:
        with self._transaction() as db:
            db.executemany("INSERT OR REPLACE INTO state VALUES (?, ?)", list(values.items()))


def _filter(subscription_id: str | None, event_ids: Sequence[str]) -> tuple[str, list[object]]:
    clauses: list[str] = []
    params: list[object] = []
    if subscription_id is not None:
        clauses.append("subscription_id = ?")
        params.append(subscription_id)
    if event_ids:
        clauses.append(f"event_id IN ({','.join('?' for _ in event_ids)})")
        params.extend(event_ids)
    return ("WHERE " + " AND ".join(clauses) if clauses else ""), params
