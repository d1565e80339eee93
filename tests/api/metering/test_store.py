"""MeteringStore rules on both backends: keys, budgets, resets, settle, ledger, rate, concurrency."""

from __future__ import annotations

import asyncio
import re
import sqlite3
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

import msgspec
import pytest
import redis.asyncio as aioredis

from api.metering.backends import open_store
from api.metering.config import Limits, MeteringConfig
from api.metering.model import (
    KEY_PATTERN,
    UNLIMITED,
    UNLIMITED_BALANCE,
    Account,
    Admission,
    Balance,
    MeteringUnavailableError,
    Outcome,
    hash_key,
    month_start,
)
from api.metering.redis_store import RedisMeteringStore
from api.metering.sqlite_store import SqliteMeteringStore
from api.metering.store import AUTH_CACHE_SECONDS, REFUSED_CACHE_SECONDS, MeteringStore

from .conftest import REDIS_URL, FakeClock, StoreFactory, new_account

pytestmark = pytest.mark.anyio


async def charged(
    store: MeteringStore, account: Account, cost: int, status: int = 200
) -> Admission:
    """Admit then settle one request; returns the admission (asserting it was admitted)."""
    admission = await store.admit(account, "test-route", cost)
    assert admission.outcome is Outcome.ADMITTED, admission
    assert admission.charge is not None
    await store.settle(admission.charge, status)
    return admission


async def raw_contents(store: MeteringStore) -> str:
    if isinstance(store, SqliteMeteringStore):
        conn = sqlite3.connect(store.path)
        dump = "\n".join(conn.iterdump())
        conn.close()
        return dump
    assert isinstance(store, RedisMeteringStore)
    parts = []
    async for key in store.client.scan_iter(match=f"{store.prefix}*"):
        parts.append(f"{key} {await store.client.dump(key)!r}")
    return "\n".join(parts)


# -- keys --------------------------------------------------------------------------------------


async def test_new_key_is_high_entropy_with_recognisable_prefix(store: MeteringStore) -> None:
    key = await store.create_key("sandbox")
    assert KEY_PATTERN.match(key)
    assert key.startswith("mi_live_")
    secret = key.rsplit("_", 1)[1]
    assert len(secret) == 32
    assert re.fullmatch(r"[A-Za-z0-9]+", secret)


async def test_only_the_hash_of_a_key_is_stored(store: MeteringStore) -> None:
    key = await store.create_key("quant", "alice")
    secret = key.rsplit("_", 1)[1]
    contents = await raw_contents(store)
    assert secret not in contents
    assert hash_key(key) in contents


async def test_authenticate_accepts_the_key_and_refuses_a_tampered_or_unknown_one(
    store: MeteringStore,
) -> None:
    key = await store.create_key("pro")
    account = await store.authenticate(key)
    assert account is not None
    assert account.plan == "pro"
    tampered = key[:-1] + ("A" if key[-1] != "A" else "B")
    assert await store.authenticate(tampered) is None
    assert await store.authenticate("mi_live_" + "x" * 10 + "_" + "y" * 32) is None
    assert await store.authenticate("not-a-key") is None


async def test_a_refused_key_is_refused_again_without_asking_the_store_for_a_while(
    store: MeteringStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A well-formed unknown key (a client's typo, an attacker's guess) costs one store lookup per
    `REFUSED_CACHE_SECONDS`, not one per request; a known key is looked up as before."""
    lookups: list[str] = []
    real = store._lookup

    async def counted(key_id: str) -> tuple[str, str, bool] | None:
        lookups.append(key_id)
        return await real(key_id)

    monkeypatch.setattr(store, "_lookup", counted)
    unknown = "mi_live_" + "x" * 10 + "_" + "y" * 32
    for _ in range(50):
        assert await store.authenticate(unknown) is None
    assert lookups == ["x" * 10]
    now = time.monotonic()
    monkeypatch.setattr(time, "monotonic", lambda: now + REFUSED_CACHE_SECONDS + 1)
    assert await store.authenticate(unknown) is None
    assert lookups == ["x" * 10] * 2
    key = await store.create_key("pro")
    assert await store.authenticate(key) is not None


async def test_revoked_key_is_refused_from_the_next_request_on(make_store: StoreFactory) -> None:
    server, cli = make_store(), make_store()
    key = await server.create_key("sandbox")
    account = await server.authenticate(key)
    assert account is not None
    await charged(server, account, 1)
    assert await cli.revoke(account.key_id)
    # The server still has the key cached; the atomic admit refuses it anyway.
    assert (await server.admit(account, "ping", 1)).outcome is Outcome.UNAUTHORIZED
    assert not await cli.revoke(account.key_id)
    assert [record.revoked_at is not None for record in await cli.list_keys()] == [True]


async def test_cached_account_answers_only_for_a_key_verified_by_this_store(
    store: MeteringStore,
) -> None:
    """The hot path's check without I/O: None until `authenticate` has verified the key, the
    account after it, and None for a tampered key with the same public id or a revoked key."""
    key = await store.create_key("internal")
    assert store.cached_account(key) is None
    account = await store.authenticate(key)
    assert account is not None
    assert store.cached_account(key) == account
    tampered = key[:-1] + ("A" if key[-1] != "A" else "B")
    await store.authenticate(tampered)
    assert store.cached_account(tampered) is None
    assert await store.revoke(account.key_id)
    assert store.cached_account(key) is None


async def test_cached_account_expires_after_the_auth_cache_window(
    store: MeteringStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A verified key is answered without I/O for AUTH_CACHE_SECONDS only; then `authenticate`
    reads the store again (and sees a revocation made by another process)."""
    key = await store.create_key("internal")
    assert await store.authenticate(key) is not None
    later = time.monotonic() + AUTH_CACHE_SECONDS + 1
    with monkeypatch.context() as patched:
        patched.setattr(time, "monotonic", lambda: later)
        assert store.cached_account(key) is None


async def test_create_key_rejects_an_unknown_plan(store: MeteringStore) -> None:
    with pytest.raises(ValueError, match="unknown plan"):
        await store.create_key("platinum")


# -- budgets -----------------------------------------------------------------------------------


async def test_monthly_base_is_drawn_before_packs(store: MeteringStore, clock: FakeClock) -> None:
    account = await new_account(store)
    await store.topup(account.key_id, 500)
    for _ in range(3):  # 3 days x 1,000 exhausts the 3,000 base
        await charged(store, account, 1000)
        clock.advance(86_400)
    entries = await store.ledger(account.key_id)
    assert all(entry.pack_tokens == 0 for entry in entries if entry.kind == "charge")
    admission = await charged(store, account, 10)
    assert admission.charge is not None
    assert (admission.charge.base_tokens, admission.charge.pack_tokens) == (0, 10)
    assert await store.balance(account) == Balance(3000, 1000, 490, 990)


async def test_charge_split_between_base_and_packs(store: MeteringStore, clock: FakeClock) -> None:
    account = await new_account(store)
    await store.topup(account.key_id, 100)
    for _ in range(2):
        await charged(store, account, 1000)
        clock.advance(86_400)
    await charged(store, account, 995)
    admission = await charged(store, account, 5)
    assert admission.charge is not None
    assert (admission.charge.base_tokens, admission.charge.pack_tokens) == (5, 0)
    clock.advance(86_400)
    admission = await charged(store, account, 8)
    assert admission.charge is not None
    assert (admission.charge.base_tokens, admission.charge.pack_tokens) == (0, 8)


async def test_daily_cap_bounds_spending_including_packs(store: MeteringStore) -> None:
    account = await new_account(store)
    await store.topup(account.key_id, 10_000)
    await charged(store, account, 1000)
    refused = await store.admit(account, "ping", 1)
    assert refused.outcome is Outcome.DAILY_LIMIT
    assert refused.balance == Balance(3000, 1000, 12_000, 0)


async def test_whole_cost_must_fit_and_nothing_is_charged_when_it_does_not(
    store: MeteringStore,
) -> None:
    account = await new_account(store)
    await charged(store, account, 995)
    refused = await store.admit(account, "get-indicators", 8)
    assert refused.outcome is Outcome.DAILY_LIMIT
    assert refused.charge is None
    assert await store.balance(account) == Balance(3000, 1000, 2005, 5)
    assert sum(entry.tokens for entry in await store.ledger(account.key_id)) == 995
    await charged(store, account, 5)  # what exactly fits is served


async def test_monthly_code_when_the_month_is_the_short_one(
    store: MeteringStore, clock: FakeClock
) -> None:
    account = await new_account(store)
    for _ in range(2):
        await charged(store, account, 1000)
        clock.advance(86_400)
    await charged(store, account, 996)
    clock.advance(86_400)  # a new day: 1,000 left today, 4 left this month
    refused = await store.admit(account, "get-indicators", 8)
    assert refused.outcome is Outcome.MONTHLY_LIMIT
    assert refused.balance == Balance(3000, 1000, 4, 1000)


async def test_daily_cap_resets_at_midnight_utc(store: MeteringStore, clock: FakeClock) -> None:
    clock.set(datetime(2026, 3, 14, 23, 59, 59, tzinfo=UTC))
    account = await new_account(store)
    await charged(store, account, 1000)
    assert (await store.admit(account, "ping", 1)).outcome is Outcome.DAILY_LIMIT
    clock.set(datetime(2026, 3, 15, 0, 0, 0, tzinfo=UTC))
    assert await store.balance(account) == Balance(3000, 1000, 2000, 1000)
    await charged(store, account, 1)


async def test_month_resets_on_the_first_utc_and_packs_roll_forward(
    store: MeteringStore, clock: FakeClock
) -> None:
    clock.set(datetime(2026, 1, 29, 12, tzinfo=UTC))
    account = await new_account(store)
    await store.topup(account.key_id, 300)
    for _ in range(3):
        await charged(store, account, 1000)
        clock.advance(86_400)
    await charged(store, account, 200)  # Feb 1 12:00: a new month already
    assert await store.balance(account) == Balance(3000, 1000, 3100, 800)
    clock.set(datetime(2026, 1, 31, 23, 59, 59, tzinfo=UTC).replace(month=2, day=28))
    await charged(store, account, 1000)
    await store.balance(account)
    clock.set(datetime(2026, 3, 1, 0, 0, tzinfo=UTC))
    assert await store.balance(account) == Balance(3000, 1000, 3300, 1000)


async def test_unused_base_does_not_carry_over(store: MeteringStore, clock: FakeClock) -> None:
    clock.set(datetime(2026, 4, 30, 23, 0, tzinfo=UTC))
    account = await new_account(store)
    await charged(store, account, 10)
    clock.set(datetime(2026, 5, 1, 0, 0, tzinfo=UTC))
    assert await store.balance(account) == Balance(3000, 1000, 3000, 1000)


# -- settle ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("status", "net"),
    [(200, 8), (204, 8), (400, 8), (404, 1), (422, 1), (503, 1), (500, 1), (402, 0), (429, 0)],
)
async def test_settle_charges_by_status(store: MeteringStore, status: int, net: int) -> None:
    account = await new_account(store)
    admission = await store.admit(account, "get-indicators", 8)
    assert admission.charge is not None
    settled_net, balance = await store.settle(admission.charge, status)
    assert settled_net == net
    assert balance == Balance(3000, 1000, 3000 - net, 1000 - net)
    entries = await store.ledger(account.key_id)
    assert sum(entry.tokens for entry in entries) == net
    assert entries[-1].status == status


async def test_settle_by_points_credits_down_to_the_final_cost(store: MeteringStore) -> None:
    account = await new_account(store)
    admission = await store.admit(account, "get-price-history", 5)
    assert admission.charge is not None
    net, balance = await store.settle(admission.charge, 200, final=2)
    assert net == 2
    assert balance.remaining == 2998


async def test_extend_draws_the_rest_of_a_cost_known_after_the_admit_and_settles_as_one(
    store: MeteringStore,
) -> None:
    """A row-priced request: its minimum admitted, the rest drawn once counted; one settle."""
    account = await new_account(store)
    admission = await store.admit(account, "bulk-export", 10)
    assert admission.charge is not None
    extended = await store.extend(account, admission.charge, 25)
    assert extended.outcome is Outcome.ADMITTED
    assert extended.charge is not None
    assert extended.charge.tokens == 35
    assert extended.charge.slot_id == admission.charge.slot_id
    assert extended.balance == Balance(3000, 1000, 2965, 965)
    net, balance = await store.settle(extended.charge, 200, final=35)
    assert (net, balance) == (35, Balance(3000, 1000, 2965, 965))
    kinds = [(e.kind, e.tokens) for e in await store.ledger(account.key_id)]
    assert kinds == [("charge", 10), ("charge", 25), ("settle", 0)]


async def test_extend_that_does_not_fit_draws_nothing_and_a_free_settle_credits_the_admit(
    store: MeteringStore,
) -> None:
    account = await new_account(store)
    await charged(store, account, 980)
    admission = await store.admit(account, "bulk-export", 10)
    assert admission.charge is not None
    refused = await store.extend(account, admission.charge, 11)  # 21 in all; 10 left today
    assert (refused.outcome, refused.charge) == (Outcome.DAILY_LIMIT, None)
    assert refused.balance == Balance(3000, 1000, 2010, 10)
    net, balance = await store.settle(admission.charge, 401)
    assert (net, balance) == (0, Balance(3000, 1000, 2020, 20))


async def test_extend_takes_no_rate_or_in_flight_slot(
    store: MeteringStore, config: MeteringConfig
) -> None:
    """The request already holds its slots: extending it is never a 429."""
    account = await new_account(store, "quant")
    limits = config.limits
    exports = [
        await store.admit(account, "bulk-export", 10) for _ in range(limits.concurrent_exports)
    ]
    for _ in range(limits.concurrent - limits.concurrent_exports):
        assert (await store.admit(account, "ping", 1)).charge is not None
    charge = exports[-1].charge
    assert charge is not None
    assert (await store.admit(account, "ping", 1)).outcome is Outcome.TOO_MANY_IN_FLIGHT
    extended = await store.extend(account, charge, 5)
    assert extended.outcome is Outcome.ADMITTED


async def test_credits_go_back_to_packs_first(store: MeteringStore, clock: FakeClock) -> None:
    account = await new_account(store)
    await store.topup(account.key_id, 50)
    for _ in range(2):
        await charged(store, account, 1000)
        clock.advance(86_400)
    await charged(store, account, 996)
    clock.advance(86_400)
    admission = await store.admit(account, "scorecard", 10)  # 4 from base, 6 from packs
    assert admission.charge is not None
    assert (admission.charge.base_tokens, admission.charge.pack_tokens) == (4, 6)
    await store.settle(admission.charge, 503)  # 9 back: 6 to packs, 3 to base
    assert await store.balance(account) == Balance(3000, 1000, 53, 999)
    assert [record.pack_balance for record in await store.list_keys()] == [50]


# -- ledger ------------------------------------------------------------------------------------


async def test_ledger_invariant_remaining_is_budget_plus_packs_minus_spending(
    store: MeteringStore, clock: FakeClock
) -> None:
    clock.set(datetime(2026, 6, 1, 0, 0, tzinfo=UTC))
    account = await new_account(store)
    await store.topup(account.key_id, 700)
    statuses = [200, 404, 503, 400, 422, 200, 500]
    for day in range(4):
        for index, status in enumerate(statuses):
            admission = await store.admit(account, f"route-{index}", 90 + index)
            if admission.charge is not None:
                await store.settle(admission.charge, status)
        if day == 2:
            await store.topup(account.key_id, 40)
        clock.advance(86_400)
    entries = await store.ledger(account.key_id, since=month_start(clock()))
    spent = sum(entry.tokens for entry in entries if entry.kind != "topup")
    packs = sum(entry.pack_tokens for entry in entries if entry.kind == "topup")
    assert (await store.balance(account)).remaining == 3000 + packs - spent
    usage = await store.usage(account.key_id)
    assert sum(usage.month.values()) == spent


# -- rate and concurrency ------------------------------------------------------------------------


async def test_301st_request_within_60_seconds_gets_429_with_retry_after(
    store: MeteringStore, clock: FakeClock
) -> None:
    account = await new_account(store, "quant")
    await charged(store, account, 1)
    clock.advance(30)
    for _ in range(299):
        await charged(store, account, 1)
    clock.advance(15)
    refused = await store.admit(account, "ping", 1)
    assert refused.outcome is Outcome.RATE_LIMITED
    assert refused.retry_after == 15  # the first request leaves the window at t=60
    assert refused.charge is None


async def test_rejected_requests_take_no_slot_and_slots_free_as_the_window_slides(
    store: MeteringStore, clock: FakeClock
) -> None:
    account = await new_account(store, "quant")
    await charged(store, account, 1)  # t=0
    clock.advance(30)
    for _ in range(299):  # t=30
        await charged(store, account, 1)
    for _ in range(50):  # t=30..55: refused, and they must not extend the wait
        assert (await store.admit(account, "ping", 1)).outcome is Outcome.RATE_LIMITED
        clock.advance(0.5)
    clock.advance(5)  # t=60: the t=0 request leaves
    await charged(store, account, 1)
    refused = await store.admit(account, "ping", 1)
    assert (refused.outcome, refused.retry_after) == (Outcome.RATE_LIMITED, 30)
    clock.advance(30)
    await charged(store, account, 1)


async def test_retry_after_is_at_least_one_second(store: MeteringStore, clock: FakeClock) -> None:
    account = await new_account(store, "quant")
    for _ in range(300):
        await charged(store, account, 1)
    clock.advance(59.9)
    refused = await store.admit(account, "ping", 1)
    assert (refused.outcome, refused.retry_after) == (Outcome.RATE_LIMITED, 1)


async def test_11th_in_flight_request_gets_429(store: MeteringStore, clock: FakeClock) -> None:
    account = await new_account(store)
    in_flight = [await store.admit(account, "ping", 1) for _ in range(10)]
    assert all(admission.outcome is Outcome.ADMITTED for admission in in_flight)
    refused = await store.admit(account, "ping", 1)
    assert refused.outcome is Outcome.TOO_MANY_IN_FLIGHT
    assert refused.retry_after >= 1
    assert refused.balance is not None
    assert refused.balance.remaining == 2990
    first = in_flight[0].charge
    assert first is not None
    await store.settle(first, 200)
    assert (await store.admit(account, "ping", 1)).outcome is Outcome.ADMITTED


async def test_in_flight_slots_of_a_crashed_worker_expire_after_the_request_timeout(
    store: MeteringStore, clock: FakeClock
) -> None:
    account = await new_account(store)
    for _ in range(10):
        await store.admit(account, "ping", 1)  # never settled: the worker died
    assert (await store.admit(account, "ping", 1)).outcome is Outcome.TOO_MANY_IN_FLIGHT
    clock.advance(120)
    assert (await store.admit(account, "ping", 1)).outcome is Outcome.ADMITTED


async def test_a_released_settle_runs_before_the_next_step_of_its_store(
    store: MeteringStore,
) -> None:
    """A settle with nothing to credit goes behind its response (`release`, not awaited): steps
    are queued in order, so the slot is free for the store's next admit, and its row is in the
    ledger for the store's next read."""
    account = await new_account(store)
    in_flight = [await store.admit(account, "ping", 1) for _ in range(10)]
    first = in_flight[0].charge
    assert first is not None
    store.release(first, 200)
    assert (await store.admit(account, "ping", 1)).outcome is Outcome.ADMITTED
    entries = await store.ledger(account.key_id)
    assert [(e.kind, e.status, e.tokens) for e in entries].count(("settle", 200, 0)) == 1
    assert (await store.balance(account)).remaining == 3000 - 11


async def test_a_worker_killed_before_its_released_settle_charges_the_net_and_holds_the_slot_until_the_timeout(
    store_url: str, store: MeteringStore, clock: FakeClock
) -> None:
    """The bound of the settle written behind the response: a worker process that dies between
    the two leaves its request charged exactly its net cost (the admit's charge: a release has
    nothing to credit) and the ledger equal to the balance; the slot stays taken until the
    request timeout (120 s), as a crashed worker's slots do, so the limit errs on refusing."""
    key = await store.create_key("sandbox")
    account = await store.authenticate(key)
    assert account is not None
    released = Path(__file__).with_name("_released.py")
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        str(released),
        store_url,
        key,
        repr(clock.now),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    _, errors = await process.communicate()
    assert process.returncode == 0, errors
    entries = await store.ledger(account.key_id)
    assert [(e.kind, e.status, e.tokens) for e in entries] == [("charge", 0, 1)]  # no settle row
    balance = await store.balance(account)
    assert (balance.remaining, balance.remaining_today) == (2999, 999)  # the net: 1 token
    held = [await store.admit(account, "ping", 1) for _ in range(9)]
    assert all(admission.outcome is Outcome.ADMITTED for admission in held)
    assert (await store.admit(account, "ping", 1)).outcome is Outcome.TOO_MANY_IN_FLIGHT
    clock.advance(119)
    assert (await store.admit(account, "ping", 1)).outcome is Outcome.TOO_MANY_IN_FLIGHT
    clock.advance(1)  # the dead worker's slot has expired (the nine others too)
    assert (await store.admit(account, "ping", 1)).outcome is Outcome.ADMITTED


async def test_slots_and_windows_are_shared_by_stores_on_one_backend(
    make_store: StoreFactory, clock: FakeClock
) -> None:
    """Two stores (two workers) on one key: the in-flight limit and the rate window count both
    stores' admits, and a slot one frees (settled or released) is free for the other."""
    one, two = make_store(), make_store()
    key = await one.create_key("sandbox")
    first, second = await one.authenticate(key), await two.authenticate(key)
    assert first is not None
    assert second is not None
    held = [await one.admit(first, "ping", 1) for _ in range(6)]
    held += [await two.admit(second, "ping", 1) for _ in range(4)]
    assert all(admission.outcome is Outcome.ADMITTED for admission in held)
    assert (await one.admit(first, "ping", 1)).outcome is Outcome.TOO_MANY_IN_FLIGHT
    assert (await two.admit(second, "ping", 1)).outcome is Outcome.TOO_MANY_IN_FLIGHT
    charges = [admission.charge for admission in held if admission.charge is not None]
    two.release(charges[7], 200)
    await two.balance(second)  # a read after it: the released settle has run
    await charged(one, first, 1)  # the slot it freed
    for index, charge in enumerate(charges):
        if index != 7:
            await (one if index < 6 else two).settle(charge, 200)
    for store, account in ((one, first), (two, second)) * 144:
        await charged(store, account, 1)
        clock.advance(0.01)
    # 11 + 288 = 299 admitted in the window; one more on either store, then the 301st refused.
    await charged(two, second, 1)
    assert (await one.admit(first, "ping", 1)).outcome is Outcome.RATE_LIMITED


async def test_a_worker_sees_the_charges_credits_and_top_ups_another_made_from_its_next_step(
    make_store: StoreFactory,
) -> None:
    """Two stores on one key, each holding its counters: what one charges, credits or tops up is
    in the other's next balance, so neither draws on tokens the other already spent."""
    one, two = make_store(), make_store()
    key = await one.create_key("sandbox")
    first, second = await one.authenticate(key), await two.authenticate(key)
    assert first is not None
    assert second is not None
    await charged(one, first, 5)
    await charged(two, second, 7)
    credited = await one.admit(first, "test-route", 8)
    assert credited.charge is not None
    await one.settle(credited.charge, 404)  # 1 token net
    await two.topup(second.key_id, 100)
    admitted = await one.admit(first, "test-route", 1)
    assert admitted.balance == Balance(3000, 1000, 3000 - 14 + 100, 1000 - 14)
    again = await two.admit(second, "test-route", 1)
    assert again.balance == Balance(3000, 1000, 3000 - 15 + 100, 1000 - 15)


async def test_a_restarted_worker_reads_the_windows_and_slots_back_from_the_store(
    make_store: StoreFactory, clock: FakeClock
) -> None:
    """A fresh store (a worker started after another's admits) refuses as the old one would."""
    old = make_store()
    account = await new_account(old)
    for _ in range(10):
        await old.admit(account, "ping", 1)  # in flight
    await old.close()
    fresh = make_store()
    assert (await fresh.admit(account, "ping", 1)).outcome is Outcome.TOO_MANY_IN_FLIGHT


async def test_internal_plan_has_no_limits_but_is_metered(store: MeteringStore) -> None:
    account = await new_account(store, "internal")
    admissions = [await store.admit(account, "ping", 5000) for _ in range(400)]
    assert all(admission.outcome is Outcome.ADMITTED for admission in admissions)
    assert admissions[-1].balance == Balance(UNLIMITED, UNLIMITED, UNLIMITED, UNLIMITED)
    entries = await store.ledger(account.key_id)
    assert sum(entry.tokens for entry in entries) == 400 * 5000


async def test_record_of_a_plan_without_limits_is_one_settled_charge(store: MeteringStore) -> None:
    """`record` (plans with nothing to check before the work): one ledger row per request, the
    charge and its settlement together (kind charge, the response's status, the net cost)."""
    account = await new_account(store, "internal")
    assert await store.record(account, "get-recent-briefs", 200, 3) == UNLIMITED_BALANCE
    assert await store.record(account, "get-indicators", 404, 1) == UNLIMITED_BALANCE
    entries = await store.ledger(account.key_id)
    assert [
        (e.kind, e.route, e.status, e.tokens, e.base_tokens, e.pack_tokens) for e in entries
    ] == [
        ("charge", "get-recent-briefs", 200, 3, 3, 0),
        ("charge", "get-indicators", 404, 1, 1, 0),
    ]
    usage = await store.usage(account.key_id)
    assert usage.month == usage.today == {"get-recent-briefs": 3, "get-indicators": 1}


async def test_record_refuses_a_revoked_key_and_records_nothing(store: MeteringStore) -> None:
    account = await new_account(store, "internal")
    await store.revoke(account.key_id)
    assert await store.record(account, "ping", 200, 1) is None
    assert await store.ledger(account.key_id) == []


async def test_clock_never_goes_backwards(store: MeteringStore, clock: FakeClock) -> None:
    account = await new_account(store)
    await charged(store, account, 1)
    clock.advance(-3600)
    await charged(store, account, 1)
    times = [entry.ts for entry in await store.ledger(account.key_id)]
    assert times == sorted(times)


# -- stress --------------------------------------------------------------------------------------


@pytest.fixture
def roomy_config(config: MeteringConfig) -> MeteringConfig:
    """Rate and connection limits out of the way, so only the budget binds."""
    return msgspec.structs.replace(
        config, limits=Limits(requests_per_window=100_000, concurrent=100_000)
    )


async def test_parallel_requests_on_one_key_never_overspend(
    store_url: str, roomy_config: MeteringConfig, clock: FakeClock
) -> None:
    workers = [open_store(store_url, roomy_config, clock) for _ in range(4)]
    try:
        account = await new_account(workers[0])

        # 64 in flight at once races the key hard, yet stays within what the stores' connection
        # pools serve before their deliberate 2 s fail-closed wait, even on a loaded 2-core CI box.
        in_flight = asyncio.Semaphore(64)

        async def request(index: int) -> int:
            worker = workers[index % len(workers)]
            async with in_flight:
                admission = await worker.admit(account, "get-indicators", 7)
                if admission.charge is None:
                    return 0
                net, balance = await worker.settle(admission.charge, 200)
            assert balance.remaining_today >= 0
            return net

        costs = await asyncio.gather(*(request(index) for index in range(400)))
        assert sum(costs) == 7 * (1000 // 7)
        balance = await workers[0].balance(account)
        entries = await workers[0].ledger(account.key_id)
        assert (
            sum(entry.tokens for entry in entries) == sum(costs) == 1000 - balance.remaining_today
        )
        assert balance.remaining == 3000 - sum(costs)
    finally:
        for worker in workers:
            await worker.close()


# -- fail closed ---------------------------------------------------------------------------------


async def test_unreachable_redis_raises_metering_unavailable(config: MeteringConfig) -> None:
    store = open_store("redis://127.0.0.1:1/0", config)
    try:
        with pytest.raises(MeteringUnavailableError):
            await store.authenticate("mi_live_" + "a" * 10 + "_" + "b" * 32)
        with pytest.raises(MeteringUnavailableError):
            await store.ping()
    finally:
        await store.close()


async def test_unopenable_sqlite_raises_metering_unavailable(config: MeteringConfig) -> None:
    store = open_store("sqlite:///dev/null/metering.sqlite3", config)
    try:
        with pytest.raises(MeteringUnavailableError):
            await store.ping()
    finally:
        await store.close()


async def test_redis_store_is_reachable_for_the_suite() -> None:
    client = aioredis.Redis.from_url(REDIS_URL)
    assert await client.ping()
    await client.aclose()


async def test_several_worker_processes_on_one_key_never_overspend(
    store_url: str, config: MeteringConfig
) -> None:
    """Four OS processes share the store (the SQLite file across processes; Redis too)."""
    store = open_store(store_url, config)  # the workers' clock: the real one
    key = await store.create_key("sandbox")
    account = await store.authenticate(key)
    assert account is not None
    worker = Path(__file__).with_name("_worker.py")
    processes = [
        await asyncio.create_subprocess_exec(
            sys.executable,
            str(worker),
            store_url,
            key,
            "120",
            "7",
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        for _ in range(4)
    ]
    outputs = [await process.communicate() for process in processes]
    assert [process.returncode for process in processes] == [0] * 4, outputs
    spent = sum(int(stdout) for stdout, _ in outputs)
    assert spent == 7 * (1000 // 7)
    entries = await store.ledger(account.key_id)
    balance = await store.balance(account)
    assert sum(entry.tokens for entry in entries) == spent == 1000 - balance.remaining_today
    assert balance.remaining == 3000 - spent
    await store.close()
