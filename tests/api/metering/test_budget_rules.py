"""The budget rules, stated once as a table of cases and held by both stores.

The rules (decisions.md, "Authentication and metering"; `api.metering.model.draw`, `net_cost`
and `split_credit`, which the SQLite store runs and the Redis store's `BATCH` script restates in
Lua): a request is admitted for its whole cost or not at all; it draws from the month's base
budget first, then from pack tokens, and always from today's cap; over today's cap it is refused
with `daily_limit`, unless the month is no longer than the day (waiting for tomorrow would not
help), then `monthly_limit`; a settle credits back the cost less the net cost by status, pack
tokens first, the base only within the month it was charged in and today's usage only on the day
it was charged.

Each case is a sequence of steps on one new key of the `budget` plan (30 tokens a month, 12 a
day) or the `internal` plan (no budget), each with what it must answer. The same table runs on
SQLite and on Redis (`store_url` is parametrized over both).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import msgspec
import pytest

from api.metering.backends import open_store
from api.metering.config import MeteringConfig, Plan
from api.metering.model import Charge, Outcome

from .conftest import FakeClock, new_account

pytestmark = pytest.mark.anyio

ADMITTED, DAILY, MONTHLY = Outcome.ADMITTED, Outcome.DAILY_LIMIT, Outcome.MONTHLY_LIMIT
DAY = 86_400.0

Step = tuple[Any, ...]
# ("admit", cost, outcome, remaining, remaining today[, from base, from packs])
# ("settle", n-th admit of the case, status, net, remaining, remaining today)
# ("topup", tokens)   ("later", seconds)   ("at", ISO time, UTC)
CASES: dict[str, tuple[str, list[Step]]] = {
    "within the day and the month, the cost is drawn from the base": (
        "budget",
        [("admit", 5, ADMITTED, 25, 7, 5, 0)],
    ),
    "over today's cap the request is refused whole, nothing drawn": (
        "budget",
        [("admit", 10, ADMITTED, 20, 2, 10, 0), ("admit", 3, DAILY, 20, 2)],
    ),
    "today's cap is whole again tomorrow": (
        "budget",
        [("admit", 12, ADMITTED, 18, 0, 12, 0), ("later", DAY), ("admit", 12, ADMITTED, 6, 0, 12, 0)],
    ),
    "a month shorter than the day answers monthly_limit": (
        "budget",
        [("admit", 12, ADMITTED, 18, 0, 12, 0), ("later", DAY),
         ("admit", 12, ADMITTED, 6, 0, 12, 0), ("later", DAY), ("admit", 7, MONTHLY, 6, 12)],
    ),
    "pack tokens do not lift today's cap": (
        "budget",
        [("topup", 20), ("admit", 12, ADMITTED, 38, 0, 12, 0), ("admit", 1, DAILY, 38, 0)],
    ),
    "pack tokens are drawn once the month's base is spent": (
        "budget",
        [("topup", 10), ("admit", 12, ADMITTED, 28, 0, 12, 0), ("later", DAY),
         ("admit", 12, ADMITTED, 16, 0, 12, 0), ("later", DAY),
         ("admit", 10, ADMITTED, 6, 2, 6, 4)],
    ),
    "a 404 costs 1 and its credit goes to pack tokens first": (
        "budget",
        [("topup", 10), ("admit", 12, ADMITTED, 28, 0, 12, 0), ("later", DAY),
         ("admit", 12, ADMITTED, 16, 0, 12, 0), ("later", DAY),
         ("admit", 10, ADMITTED, 6, 2, 6, 4), ("settle", 2, 404, 1, 15, 11)],
    ),
    "a 2xx costs the whole charge": (
        "budget",
        [("admit", 5, ADMITTED, 25, 7, 5, 0), ("settle", 0, 200, 5, 25, 7)],
    ),
    "a 304 costs nothing": (
        "budget",
        [("admit", 5, ADMITTED, 25, 7, 5, 0), ("settle", 0, 304, 0, 30, 12)],
    ),
    "yesterday's charge credited today gives back the month, not today": (
        "budget",
        [("at", "2026-03-14T23:59:00"), ("admit", 10, ADMITTED, 20, 2, 10, 0),
         ("at", "2026-03-15T00:01:00"), ("settle", 0, 404, 1, 29, 12),
         ("admit", 12, ADMITTED, 17, 0, 12, 0)],
    ),
    "last month's charge credited this month gives back no base": (
        "budget",
        [("at", "2026-03-31T23:59:00"), ("admit", 10, ADMITTED, 20, 2, 10, 0),
         ("at", "2026-04-01T00:01:00"), ("settle", 0, 404, 1, 30, 12),
         ("admit", 12, ADMITTED, 18, 0, 12, 0)],
    ),
    "last month's pack tokens are given back this month": (
        "budget",
        [("at", "2026-03-29T12:00:00"), ("topup", 10), ("admit", 12, ADMITTED, 28, 0, 12, 0),
         ("later", DAY), ("admit", 12, ADMITTED, 16, 0, 12, 0),
         ("at", "2026-03-31T23:59:00"), ("admit", 10, ADMITTED, 6, 2, 6, 4),
         ("at", "2026-04-01T00:01:00"), ("settle", 2, 404, 1, 40, 12)],
    ),
    "a plan without a budget draws every cost and reports no limit": (
        "internal",
        [("admit", 5000, ADMITTED, -1, -1, 5000, 0), ("settle", 0, 404, 1, -1, -1)],
    ),
}  # fmt: skip


@pytest.fixture
def budget_config(config: MeteringConfig) -> MeteringConfig:
    return msgspec.structs.replace(
        config, plans={**config.plans, "budget": Plan(monthly_budget=30, daily_cap=12)}
    )


@pytest.mark.parametrize("case", list(CASES))
async def test_the_budget_rules_hold_on_both_stores(
    store_url: str, budget_config: MeteringConfig, clock: FakeClock, case: str
) -> None:
    plan, steps = CASES[case]
    store = open_store(store_url, budget_config, clock)
    try:
        account = await new_account(store, plan)
        charges: list[Charge | None] = []
        for number, step in enumerate(steps):
            at = f"{case}, step {number} {step}"
            match step:
                case ("topup", tokens):
                    await store.topup(account.key_id, tokens)
                case ("later", seconds):
                    clock.advance(seconds)
                case ("at", moment):
                    clock.set(datetime.fromisoformat(moment).replace(tzinfo=UTC))
                case ("admit", cost, outcome, remaining, today, *drawn):
                    admission = await store.admit(account, "ping", cost)
                    assert admission.balance is not None, at
                    got = (admission.outcome, admission.balance.remaining)
                    assert (*got, admission.balance.remaining_today) == (
                        outcome,
                        remaining,
                        today,
                    ), at
                    charge = admission.charge
                    assert (charge is not None) == (outcome is ADMITTED), at
                    if charge is not None:
                        assert [charge.base_tokens, charge.pack_tokens] == drawn, at
                    charges.append(charge)
                case ("settle", index, status, net, remaining, today):
                    charge = charges[index]
                    assert charge is not None, at
                    settled, balance = await store.settle(charge, status)
                    assert (settled, balance.remaining, balance.remaining_today) == (
                        net,
                        remaining,
                        today,
                    ), at
                case _:
                    raise AssertionError(f"a step this table does not know: {at}")
    finally:
        await store.close()
