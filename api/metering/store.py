"""The async `MeteringStore` interface, its key cache, and where the store lives by default.

`api.metering.backends.open_store` chooses a backend by URL (it imports both, which import this).
"""

from __future__ import annotations

import hmac
import itertools
import secrets
import time
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path

from api.metering.config import MeteringConfig
from api.metering.model import (
    Account,
    Admission,
    Balance,
    Charge,
    KeyRecord,
    LedgerEntry,
    Usage,
    hash_key,
    key_id_of,
)

Clock = Callable[[], float]
EXPORT_SLOT = "x"
"""The first letter of an export's in-flight slot id (other ids are hex): both stores count a key's
exports in flight from its slot ids alone, so no layout of theirs changes."""
AUTH_CACHE_SECONDS = 30.0
"""How long a verified key's (hash, plan) is reused; revocation is checked inside every admit."""
REFUSED_CACHE_SECONDS = 5.0
"""How long a key the store refused (unknown, wrong secret, revoked) is refused again without asking
it: a client or an attacker repeating one bad key costs one store lookup per this interval. A key
created meanwhile works at the latest this long after it was first refused."""
KEYS_REMEMBERED = 4096
"""Keys each of the maps of accepted and refused keys holds before it is dropped whole."""


class MeteringStore(ABC):
    """Keys, balances and the ledger; every check-and-charge is one atomic step in the backend.

    `clock` (tests only) replaces the backend's own clock; the store never lets time go backwards.
    """

    def __init__(self, config: MeteringConfig, clock: Clock | None = None) -> None:
        self.config = config
        self.clock = clock
        # Slot ids: unique across processes and hosts without a urandom call per request.
        self._slot_prefix = secrets.token_hex(8)
        self._slot_counter = itertools.count()
        # Key id -> (stored hash, account, expiry): a known key id's wrong secret is refused and
        # the Redis settle finds its plan without a store round trip (not an instructions saving:
        # the caches section's row "key accounts" shows none).
        self._auth_cache: dict[str, tuple[str, Account, float]] = {}
        # Keys as presented that `authenticate` accepted, with when that expires: the hot path's
        # one lookup (an exact match of the whole key, so no digest to compare; the caches
        # section's row "verified keys").
        self._verified: dict[str, tuple[Account, float]] = {}
        # Keys as presented that it refused, with when that expires (`REFUSED_CACHE_SECONDS`).
        self._refused: dict[str, float] = {}

    def new_slot(self, route: str) -> str:
        """A unique in-flight slot id for a request of `route` (`EXPORT_SLOT` first for an export)."""
        slot = f"{self._slot_prefix}{next(self._slot_counter):x}"
        return EXPORT_SLOT + slot if self.config.is_export(route) else slot

    def cached_account(self, key: str) -> Account | None:
        """The account of `key` when this process verified it in the last `AUTH_CACHE_SECONDS`
        (no I/O: the hot path's check); None when `authenticate` must decide."""
        verified = self._verified.get(key)
        if verified is None or verified[1] <= time.monotonic():
            return None
        return verified[0]

    def _forget(self, key_id: str) -> None:
        """Drop what this process cached about a key id (it was revoked here)."""
        self._auth_cache.pop(key_id, None)
        self._verified = {
            key: verified
            for key, verified in self._verified.items()
            if verified[0].key_id != key_id
        }

    async def authenticate(self, key: str) -> Account | None:
        """The account of a well-formed, known, unrevoked key; None otherwise (remembered for
        `REFUSED_CACHE_SECONDS`)."""
        refused_until = self._refused.get(key)
        if refused_until is not None and refused_until > time.monotonic():
            return None
        account = await self._authenticate(key)
        if account is None:
            if len(self._refused) >= KEYS_REMEMBERED:
                self._refused.clear()
            self._refused[key] = time.monotonic() + REFUSED_CACHE_SECONDS
        return account

    async def _authenticate(self, key: str) -> Account | None:
        key_id = key_id_of(key)
        if key_id is None:
            return None
        digest = hash_key(key)
        cached = self._auth_cache.get(key_id)
        if cached is not None and cached[2] > time.monotonic():  # verified here lately
            if not hmac.compare_digest(cached[0], digest):
                return None
            self._remember(key, cached[1], cached[2])
            return cached[1]
        found = await self._lookup(key_id)
        if found is None:
            return None
        stored_hash, plan, revoked = found
        if revoked or not hmac.compare_digest(stored_hash, digest):
            return None
        account = Account(key_id=key_id, plan=plan)
        expires = time.monotonic() + AUTH_CACHE_SECONDS
        self._auth_cache[key_id] = (stored_hash, account, expires)
        self._remember(key, account, expires)
        return account

    def _remember(self, key: str, account: Account, expires: float) -> None:
        if len(self._verified) >= KEYS_REMEMBERED:
            self._verified.clear()
        self._verified[key] = (account, expires)

    @abstractmethod
    async def _lookup(self, key_id: str) -> tuple[str, str, bool] | None:
        """(sha256 hex, plan, revoked) of a key id, or None."""

    @abstractmethod
    def admit(self, account: Account, route: str, cost: int) -> Awaitable[Admission]:
        """One atomic step: revocation, sliding-window rate, concurrency slot, budget, charge.

        An awaitable rather than a coroutine, as `record` is."""

    async def extend(self, account: Account, charge: Charge, extra: int) -> Admission:
        """Draw `extra` more tokens for the admitted request of `charge`: a cost known only once
        its route has counted what it returns (bulk export's rows).

        One atomic step with admit's budget rule (the whole extra fits today and this month, or
        nothing is drawn and the outcome is the token-limit one) but no rate or in-flight slot of
        its own: the request already holds them. Admitted, the charge is the request's whole, and
        `settle` settles it as one.
        """
        more = await self._draw(account, charge.route, extra)
        if more.charge is None:
            return more
        return Admission(more.outcome, more.balance, charge.plus(more.charge))

    @abstractmethod
    async def _draw(self, account: Account, route: str, cost: int) -> Admission:
        """`admit` without the rate and connection limits and without taking a slot."""

    @abstractmethod
    async def settle(
        self, charge: Charge, status: int, final: int | None = None
    ) -> tuple[int, Balance]:
        """Settle by response status: credit down to the net cost (a ledger row), free the slot.

        `final` is a by-points route's cost for what it returned. Returns (net cost, balance).
        """

    @abstractmethod
    def release(self, charge: Charge, status: int) -> None:
        """Settle, behind its response, a request whose net cost is its whole up-front charge
        (nothing to credit back: every 2xx and 400 of a fixed-cost route): its in-flight slot is
        freed and its `settle 0` ledger row written in a group of a later step, not awaited.

        Nothing about the request's cost depends on it (the counters already hold the charge, which
        is the net), so its response goes out at once. Steps are queued in order: this process's
        next admit of the key runs after it. Should it never run (the process dies first, or the
        store fails), the slot expires after the request timeout and the ledger keeps the charge
        without its settle row: the request is charged exactly its net cost either way. Never
        raises (a store failure here is that case).
        """

    @abstractmethod
    def record(
        self, account: Account, route: str, status: int, tokens: int
    ) -> Awaitable[Balance | None]:
        """A plan without limits (`Plan.has_limits` false): ONE atomic step once its response is
        ready and held: revocation, then the request's net cost as one settled `charge` ledger
        row (with the response's status). None when the key is revoked: nothing is recorded.

        An awaitable rather than a coroutine, so a backend can hand out its group's future
        itself (one coroutine fewer per request on the hot path).
        """

    @abstractmethod
    async def balance(self, account: Account) -> Balance: ...

    @abstractmethod
    async def create_key(self, plan: str, name: str = "") -> str:
        """Store a new key's hash and return the key (shown once, never stored)."""

    @abstractmethod
    async def list_keys(self) -> list[KeyRecord]: ...

    @abstractmethod
    async def revoke(self, key_id: str) -> bool:
        """Revoke a key by id; True when a key was revoked now."""

    @abstractmethod
    async def topup(self, key_id: str, tokens: int) -> int:
        """Add a one-time pack of `tokens`; returns the new pack balance (KeyError if unknown)."""

    @abstractmethod
    async def ledger(self, key_id: str, since: float = 0.0) -> list[LedgerEntry]: ...

    @abstractmethod
    async def usage(self, key_id: str) -> Usage:
        """Plan, balance, and net spending by route today and this month (KeyError if unknown)."""

    @abstractmethod
    async def ping(self) -> float:
        """Round-trip latency in ms; raises MeteringUnavailableError when the store is down."""

    @abstractmethod
    async def close(self) -> None: ...


def default_store_url(data_dir: Path) -> str:
    return f"sqlite://{(data_dir / 'metering.sqlite3').resolve()}"


def store_url_from_env(env: Mapping[str, str], data_dir: Path) -> str:
    """`MI_METERING_URL`, else the SQLite file `<data_dir>/metering.sqlite3`."""
    return env.get("MI_METERING_URL") or default_store_url(data_dir)
