"""Metering values shared by both store backends: keys, accounts, charges, UTC periods, settle rule."""

from __future__ import annotations

import hashlib
import re
import secrets
import string
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import StrEnum

import msgspec

from api.metering.config import Plan

KEY_PREFIX = "mi_live_"
KEY_ID_LENGTH = 10
SECRET_LENGTH = 32  # base62: 32 * log2(62) ~ 190 bits of entropy
_ALPHABET = string.ascii_letters + string.digits
KEY_PATTERN = re.compile(
    rf"^{KEY_PREFIX}([A-Za-z0-9]{{{KEY_ID_LENGTH}}})_[A-Za-z0-9]{{{SECRET_LENGTH}}}$"
)
UNLIMITED = -1
"""Header value of a limit or remaining balance on a plan without a budget limit."""


class MeteringUnavailableError(RuntimeError):
    """The metering store cannot be reached; metered routes fail closed (503 + Retry-After)."""


def new_key() -> tuple[str, str]:
    """A fresh key and its public id: `mi_live_<id>_<secret>`."""
    key_id = "".join(secrets.choice(_ALPHABET) for _ in range(KEY_ID_LENGTH))
    secret = "".join(secrets.choice(_ALPHABET) for _ in range(SECRET_LENGTH))
    return f"{KEY_PREFIX}{key_id}_{secret}", key_id


def hash_key(key: str) -> str:
    return hashlib.sha256(key.encode("ascii")).hexdigest()


def key_id_of(key: str) -> str | None:
    """The public id of a well-formed key, else None."""
    match = KEY_PATTERN.match(key)
    return match.group(1) if match else None


def key_id_from_reference(reference: str) -> str:
    """The id named by a full key, `mi_live_<id>` or a bare id (what the CLI accepts)."""
    full = key_id_of(reference)
    if full:
        return full
    return reference.removeprefix(KEY_PREFIX).split("_", 1)[0]


def day_index(ts: float) -> int:
    """UTC calendar day number (days since 1970-01-01)."""
    return int(ts // 86_400)


def month_index(ts: float) -> int:
    """UTC calendar month number: year * 12 + month - 1."""
    moment = datetime.fromtimestamp(ts, UTC)
    return moment.year * 12 + moment.month - 1


def month_start(ts: float) -> float:
    moment = datetime.fromtimestamp(ts, UTC)
    return datetime(moment.year, moment.month, 1, tzinfo=UTC).timestamp()


def day_start(ts: float) -> float:
    return float(day_index(ts) * 86_400)


class Outcome(StrEnum):
    ADMITTED = "admitted"
    UNAUTHORIZED = "unauthorized"
    RATE_LIMITED = "rate_limited"
    TOO_MANY_IN_FLIGHT = "too_many_in_flight"
    TOO_MANY_EXPORTS = "too_many_exports"
    DAILY_LIMIT = "daily_limit"
    MONTHLY_LIMIT = "monthly_limit"


class Account(msgspec.Struct, frozen=True, gc=False):
    """An authenticated key: its public id and plan."""

    key_id: str
    plan: str


@dataclass(frozen=True, slots=True)
class KeyRecord:
    """A key as listed by the CLI (never the key itself: only its hash is stored)."""

    key_id: str
    plan: str
    name: str
    created_at: float
    revoked_at: float | None
    pack_balance: int


class Balance(msgspec.Struct, frozen=True, gc=False):
    """The four balance headers' values (UNLIMITED where the plan has no budget limit)."""

    limit: int
    limit_today: int
    remaining: int
    remaining_today: int


UNLIMITED_BALANCE = Balance(UNLIMITED, UNLIMITED, UNLIMITED, UNLIMITED)
"""The balance of a plan without a budget (every value UNLIMITED)."""


class Charge(msgspec.Struct, frozen=True, gc=False):
    """What one admitted request was charged, and from where; settle() credits it back."""

    key_id: str
    route: str
    slot_id: str
    tokens: int
    base_tokens: int
    pack_tokens: int
    ts: float

    def plus(self, more: Charge) -> Charge:
        """This charge and a later one for the same request (`MeteringStore.extend`): one charge,
        settled as one, dated by the admit."""
        return Charge(
            self.key_id,
            self.route,
            self.slot_id,
            self.tokens + more.tokens,
            self.base_tokens + more.base_tokens,
            self.pack_tokens + more.pack_tokens,
            self.ts,
        )


class Admission(msgspec.Struct, frozen=True, gc=False):
    """The result of the atomic admit step."""

    outcome: Outcome
    balance: Balance | None = None
    charge: Charge | None = None
    retry_after: int = 0


@dataclass(frozen=True, slots=True)
class Usage:
    """A key's spending: plan, balance and net tokens per route today and this month."""

    key_id: str
    plan: str
    balance: Balance
    pack_balance: int
    today: dict[str, int]
    month: dict[str, int]


FREE_STATUSES = frozenset({304, 401, 402, 403, 429})
"""Answers that cost nothing (a 304 still counts toward the rate and connection limits)."""


def net_cost(status: int, charged: int, final: int | None = None) -> int:
    """Tokens a request costs net, by response status (decisions.md, Authentication and metering).

    2xx/3xx and 400 cost the route's cost (`final`, never above what was charged); a 304 (the
    client's copy is current, decisions.md "Conditional requests"), 401, 402, 403 and 429 cost 0;
    404, 422, any other 4xx and every 5xx cost 1 (the failure floor).
    """
    if status in FREE_STATUSES:
        return 0
    if status < 400 or status == 400:
        return charged if final is None else max(0, min(final, charged))
    return min(1, charged)


def split_credit(charge: Charge, net: int) -> tuple[int, int]:
    """(pack, base) tokens to give back: packs first, since pack tokens never expire."""
    credit = max(0, charge.tokens - net)
    packs = min(credit, charge.pack_tokens)
    return packs, credit - packs


@dataclass(frozen=True, slots=True)
class LedgerEntry:
    """One row of the durable ledger: a charge (tokens > 0), a credit (< 0) or a pack top-up."""

    key_id: str
    kind: str
    route: str
    status: int
    tokens: int
    base_tokens: int
    pack_tokens: int
    ts: float


def balance_of(plan: Plan, base_used: int, packs: int, day_used: int) -> Balance:
    """Balance headers from a key's counters for the current month and day."""
    if plan.monthly_budget is None or plan.daily_cap is None:
        return UNLIMITED_BALANCE
    return Balance(
        limit=plan.monthly_budget,
        limit_today=plan.daily_cap,
        remaining=max(0, plan.monthly_budget - base_used) + packs,
        remaining_today=max(0, plan.daily_cap - day_used),
    )


def draw(
    plan: Plan, cost: int, base_used: int, packs: int, day_used: int
) -> Outcome | tuple[int, int]:
    """(base, pack) tokens to draw for `cost`, or the token-limit outcome; the whole cost or nothing.

    The daily code answers when today's cap is strictly the shorter of the two balances: when the
    month is short too and waiting for tomorrow would not help, the monthly code answers.
    """
    if plan.monthly_budget is None or plan.daily_cap is None:
        return cost, 0
    base_left = max(0, plan.monthly_budget - base_used)
    month_left = base_left + packs
    day_left = max(0, plan.daily_cap - day_used)
    if cost > month_left and month_left <= day_left:
        return Outcome.MONTHLY_LIMIT
    if cost > day_left:
        return Outcome.DAILY_LIMIT
    from_base = min(cost, base_left)
    return from_base, cost - from_base


def summarize_usage(
    key_id: str, plan: str, balance: Balance, packs: int, entries: list[LedgerEntry], today: float
) -> Usage:
    """Net spending by route this month and today from ledger rows (top-ups excluded)."""
    month: dict[str, int] = {}
    day: dict[str, int] = {}
    for entry in entries:
        if entry.kind == "topup":
            continue
        month[entry.route] = month.get(entry.route, 0) + entry.tokens
        if entry.ts >= today:
            day[entry.route] = day.get(entry.route, 0) + entry.tokens
    return Usage(key_id, plan, balance, packs, day, month)
