"""Group commit: many requests' admits and settles share one transaction (SQLite) or one script call
in one round trip (Redis), yet each step stays atomic, nothing overspends, and no request goes on before its step is
durable; a group that fails to commit serves nobody."""

from __future__ import annotations

import asyncio
import sqlite3
import time
import uuid
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import msgspec
import pytest
import redis

from api.metering import redis_store as redis_store_module
from api.metering import sqlite_store
from api.metering.backends import open_store
from api.metering.config import Limits, MeteringConfig, MeteringConfigError, Plan
from api.metering.model import (
    UNLIMITED_BALANCE,
    Account,
    Admission,
    Charge,
    LedgerEntry,
    MeteringUnavailableError,
    Outcome,
)
from api.metering.redis_store import _RECORD, _SETTLE, BATCH, RedisMeteringStore, _bulk, _Script
from api.metering.resp import RespProtocol
from api.metering.sqlite_store import SqliteMeteringStore
from api.metering.store import MeteringStore

from .conftest import REDIS_URL, FakeClock, new_account

pytestmark = pytest.mark.anyio


@pytest.fixture
def roomy_config(config: MeteringConfig) -> MeteringConfig:
    """Rate and connection limits out of the way, so only the budget binds."""
    return msgspec.structs.replace(
        config, limits=Limits(requests_per_window=100_000, concurrent=100_000)
    )


def group_sizes(store: MeteringStore, monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Record the size of every group the store commits (SQLite: steps per transaction)."""
    sizes: list[int] = []
    assert isinstance(store, SqliteMeteringStore)
    commit = store._commit_group

    def recording(conn: sqlite3.Connection, batch: list[Any], wait: bool) -> list[tuple[bool, Any]]:
        outcomes = commit(conn, batch, wait)  # raises when the lock is busy: nothing committed
        sizes.append(len(batch))
        return outcomes

    monkeypatch.setattr(store, "_commit_group", recording)
    return sizes


@contextmanager
def lock_held(store: SqliteMeteringStore) -> Iterator[None]:
    """Another connection (as another worker process would) holds the write lock meanwhile: the
    loop never waits for it, so the steps queued go to the store's thread, which waits."""
    other = sqlite3.connect(store.path, isolation_level=None)
    other.execute("BEGIN IMMEDIATE")
    try:
        yield
    finally:
        other.execute("COMMIT")
        other.close()


async def test_one_store_under_concurrency_groups_steps_and_never_overspends(
    store_url: str, roomy_config: MeteringConfig, clock: FakeClock
) -> None:
    """One worker, 400 requests at once on 1,000 tokens today: groups form, the budget holds."""
    store = open_store(store_url, roomy_config, clock)
    try:
        account = await new_account(store)

        async def request() -> int:
            admission = await store.admit(account, "get-indicators", 7)
            if admission.charge is None:
                assert admission.outcome is Outcome.DAILY_LIMIT
                return 0
            net, balance = await store.settle(admission.charge, 200)
            assert balance.remaining_today >= 0
            return net

        costs = await asyncio.gather(*(request() for _ in range(400)))
        assert sum(costs) == 7 * (1000 // 7)
        balance = await store.balance(account)
        entries = await store.ledger(account.key_id)
        assert sum(e.tokens for e in entries) == sum(costs) == 1000 - balance.remaining_today
        assert balance.remaining == 3000 - sum(costs)
        kinds = [e.kind for e in entries]
        assert kinds.count("charge") == kinds.count("settle") == 1000 // 7
    finally:
        await store.close()


async def test_sqlite_steps_queued_together_commit_in_one_transaction(
    tmp_path: Path, config: MeteringConfig, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = SqliteMeteringStore(tmp_path / "metering.sqlite3", config, clock)
    try:
        account = await new_account(store, "internal")
        sizes = group_sizes(store, monkeypatch)
        with lock_held(store):
            admits = [asyncio.ensure_future(store.admit(account, "ping", 1)) for _ in range(8)]
            await asyncio.sleep(0.05)
            assert not any(admit.done() for admit in admits)  # nothing answers before the commit
        admissions = await asyncio.gather(*admits)
        assert sizes == [8]
        assert all(a.outcome is Outcome.ADMITTED for a in admissions)
        assert len({a.charge.slot_id for a in admissions if a.charge}) == 8
        entries = await store.ledger(account.key_id)
        assert [(e.kind, e.tokens) for e in entries] == [("charge", 1)] * 8
    finally:
        await store.close()


async def test_sqlite_a_briefly_busy_lock_is_retried_on_the_loop_without_blocking_it(
    tmp_path: Path, config: MeteringConfig, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another connection holds the write lock (as another worker's commit would): the loop tries
    again each iteration instead of sleeping in SQLite's busy handler (its connection never waits,
    and nothing goes to the thread), and commits the group, with the steps queued since, once the
    lock is free."""
    monkeypatch.setattr(sqlite_store, "BUSY_RETRY_SECONDS", 60.0)  # never hand off here
    store = SqliteMeteringStore(tmp_path / "metering.sqlite3", config, clock)
    try:
        account = await new_account(store, "internal")
        with lock_held(store):
            first = [asyncio.ensure_future(store.admit(account, "ping", 1)) for _ in range(3)]
            await asyncio.sleep(0.02)
            later = asyncio.ensure_future(store.admit(account, "get-indicators", 2))
            await asyncio.sleep(0.02)
            assert store._handed_off == 0
            assert not any(waiter.done() for waiter in [*first, later])
        admissions = await asyncio.gather(*first, later)
        assert all(admission.charge is not None for admission in admissions)
        entries = await store.ledger(account.key_id)
        assert [e.route for e in entries] == ["ping"] * 3 + ["get-indicators"]
    finally:
        await store.close()


async def test_sqlite_the_loop_never_waits_for_another_process_lock_and_groups_keep_order(
    tmp_path: Path, config: MeteringConfig, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A lock held longer than the retry window: groups go to the store's thread in order (the
    loop keeps running: a later group is queued meanwhile), then commit in that order."""
    monkeypatch.setattr(sqlite_store, "BUSY_RETRY_SECONDS", 0.0)  # hand off at the first busy
    store = SqliteMeteringStore(tmp_path / "metering.sqlite3", config, clock)
    try:
        account = await new_account(store, "internal")
        with lock_held(store):
            first = [asyncio.ensure_future(store.admit(account, "ping", 1)) for _ in range(3)]
            await asyncio.sleep(0.02)
            assert store._handed_off == 1
            later = [
                asyncio.ensure_future(store.admit(account, "get-indicators", 2)) for _ in range(2)
            ]
            await asyncio.sleep(0.02)
            assert store._handed_off == 2
            assert not any(waiter.done() for waiter in [*first, *later])
        await asyncio.gather(*first, *later)
        assert store._handed_off == 0
        entries = await store.ledger(account.key_id)
        assert [e.route for e in entries] == ["ping"] * 3 + ["get-indicators"] * 2
        assert (await store.admit(account, "ping", 1)).charge is not None  # inline again
    finally:
        await store.close()


async def test_sqlite_a_failing_step_is_rolled_back_alone(
    tmp_path: Path, config: MeteringConfig, clock: FakeClock
) -> None:
    store = SqliteMeteringStore(tmp_path / "metering.sqlite3", config, clock)
    try:
        account = await new_account(store, "internal")

        def write(group: Any, route: str) -> str:
            store._ledger_row(group.conn, account.key_id, "charge", route, 0, 1, 1, 0, group.now)
            return route

        def fail(group: Any) -> str:
            write(group, "bad")
            raise ValueError("this step's own failure")

        first = asyncio.ensure_future(store._grouped(lambda group: write(group, "one")))
        bad = asyncio.ensure_future(store._grouped(fail))
        last = asyncio.ensure_future(store._grouped(lambda group: write(group, "two")))
        assert await first == "one"
        assert await last == "two"
        with pytest.raises(ValueError, match="own failure"):
            await bad
        entries = await store.ledger(account.key_id)
        assert [e.route for e in entries] == ["one", "two"]
    finally:
        await store.close()


async def test_sqlite_a_group_that_cannot_commit_serves_nobody(
    tmp_path: Path, config: MeteringConfig, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A store error inside the group: every waiter gets MeteringUnavailableError, nothing is kept."""
    store = SqliteMeteringStore(tmp_path / "metering.sqlite3", config, clock)
    try:
        account = await new_account(store, "internal")
        admission = await store.admit(account, "ping", 1)
        assert admission.charge is not None
        broken = {"on": True}
        settle = store._settle

        def failing_settle(*args: Any) -> Any:
            result = settle(*args)
            if broken["on"]:
                raise sqlite3.OperationalError("disk I/O error")
            return result

        monkeypatch.setattr(store, "_settle", failing_settle)
        with lock_held(store):
            admits = [asyncio.ensure_future(store.admit(account, "ping", 1)) for _ in range(4)]
            settled = asyncio.ensure_future(store.settle(admission.charge, 200))
            await asyncio.sleep(0.05)
        for waiter in [*admits, settled]:
            with pytest.raises(MeteringUnavailableError):
                await waiter
        broken["on"] = False
        entries = await store.ledger(account.key_id)
        assert [(e.kind, e.tokens) for e in entries] == [("charge", 1)]  # the first admit only
        net, _ = await store.settle(admission.charge, 200)
        assert net == 1
    finally:
        await store.close()


# -- Redis: one BATCH script call per group -------------------------------------------------------


async def awaited(step: Callable[[], Awaitable[Any]]) -> Any:
    """`step()` awaited in a task of its own: steps gathered this way queue in the order given."""
    return await step()


def redis_store(redis_prefix: str, config: MeteringConfig, clock: FakeClock) -> RedisMeteringStore:
    store = open_store(f"{REDIS_URL}?prefix={redis_prefix}", config, clock)
    assert isinstance(store, RedisMeteringStore)
    return store


EVALSHA = b"$7\r\nEVALSHA\r\n"
SCRIPT_LOAD = b"$6\r\nSCRIPT\r\n$4\r\nLOAD\r\n"


def recorded_writes(monkeypatch: pytest.MonkeyPatch) -> list[bytes]:
    """Every write on the sockets of the store's RESP connections (the hot path's only writes)."""
    writes: list[bytes] = []
    made = RespProtocol.connection_made

    def recording(protocol: RespProtocol, transport: asyncio.BaseTransport) -> None:
        made(protocol, transport)
        write = transport.write  # type: ignore[attr-defined]

        def record(data: bytes) -> None:
            writes.append(bytes(data))
            write(data)

        setattr(transport, "write", record)  # noqa: B010 (this transport instance only)

    monkeypatch.setattr(RespProtocol, "connection_made", recording)
    return writes


async def test_redis_steps_queued_together_go_out_as_one_script_call_in_one_write(
    redis_prefix: str, config: MeteringConfig, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = redis_store(redis_prefix, config, clock)
    try:
        account = await new_account(store, "internal")
        writes = recorded_writes(monkeypatch)
        admissions = await asyncio.gather(*(store.admit(account, "ping", 1) for _ in range(8)))
        assert [write.count(EVALSHA) for write in writes] == [1]  # the 8 steps in one call
        assert all(a.outcome is Outcome.ADMITTED for a in admissions)
        settled = await asyncio.gather(
            *(store.settle(a.charge, 404) for a in admissions if a.charge)
        )
        assert [write.count(EVALSHA) for write in writes] == [1, 1]
        assert [net for net, _ in settled] == [1] * 8
        entries = await store.ledger(account.key_id)
        assert [(e.kind, e.tokens) for e in entries] == [("charge", 1)] * 8 + [("settle", 0)] * 8
    finally:
        await store.close()


async def test_redis_a_script_unknown_to_redis_is_loaded_and_run_once(
    redis_prefix: str, config: MeteringConfig, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """NOSCRIPT (a restarted Redis) means the script did not run: it is loaded, then run once."""
    store = redis_store(redis_prefix, config, clock)
    try:
        account = await new_account(store, "sandbox")
        fresh = f"{BATCH}\n-- {uuid.uuid4().hex}\n"  # a script this Redis has never seen
        store._batch_script = _Script.of(fresh)
        writes = recorded_writes(monkeypatch)
        admissions = await asyncio.gather(*(store.admit(account, "ping", 1) for _ in range(3)))
        assert all(a.outcome is Outcome.ADMITTED for a in admissions)
        # The batch, then one SCRIPT LOAD ahead of the batch sent once more, in one write.
        assert [(w.count(SCRIPT_LOAD), w.count(EVALSHA)) for w in writes] == [(0, 1), (1, 1)]
        assert writes[1].index(SCRIPT_LOAD) < writes[1].index(EVALSHA)
        entries = await store.ledger(account.key_id)
        assert [(e.kind, e.tokens) for e in entries] == [("charge", 1)] * 3
        assert (await store.balance(account)).remaining_today == 997
    finally:
        await store.close()


async def test_redis_an_error_reply_fails_the_steps_of_its_batch_and_the_connection_stays(
    redis_prefix: str, config: MeteringConfig, clock: FakeClock
) -> None:
    store = redis_store(redis_prefix, config, clock)
    try:
        account = await new_account(store, "internal")
        assert (await store.admit(account, "ping", 1)).charge is not None
        connection = store._pipeline_here()._protocol
        batch_script = store._batch_script
        failing = f"return redis.error_reply('ERR boom {uuid.uuid4().hex}')"
        await store.client.script_load(failing)
        store._batch_script = _Script.of(failing)
        results = await asyncio.gather(
            *(store.admit(account, "ping", 1) for _ in range(3)), return_exceptions=True
        )
        assert all(isinstance(r, MeteringUnavailableError) and "boom" in str(r) for r in results)
        store._batch_script = batch_script
        assert (await store.admit(account, "ping", 1)).charge is not None
        assert store._pipeline_here()._protocol is connection  # the connection stays
        entries = await store.ledger(account.key_id)
        assert [(e.kind, e.tokens) for e in entries] == [("charge", 1)] * 2
    finally:
        await store.close()


async def test_redis_a_step_that_raises_in_the_batch_fails_alone(
    redis_prefix: str, config: MeteringConfig, clock: FakeClock
) -> None:
    store = redis_store(redis_prefix, config, clock)
    try:
        account = await new_account(store, "internal")
        broken_settle = ["slot", "ping", "200", "not a number", "0", "0", "-1", "-1"]
        results = await asyncio.gather(
            store.admit(account, "ping", 1),
            store._step(account.key_id, _SETTLE, [_bulk(arg) for arg in broken_settle]),
            admit_again(store, account),
            return_exceptions=True,
        )
        assert isinstance(results[1], MeteringUnavailableError)
        assert "arithmetic" in str(results[1])
        assert [r.outcome for r in results if isinstance(r, Admission)] == [Outcome.ADMITTED] * 2
        entries = await store.ledger(account.key_id)
        assert [(e.kind, e.tokens) for e in entries] == [("charge", 1)] * 2
    finally:
        await store.close()


def test_redis_an_admit_reply_the_script_does_not_write_fails_closed() -> None:
    """An admit's reply is read as it is parsed; one that is not the script's (a bug, another
    script under the same name) fails its request with the store's 503, never a half-read charge."""
    read = redis_store_module._admission
    assert read("k", "ping", "slot", 1, "admitted 0 10 5 9 4 1 0 1.5").charge is not None
    for reply in ("admitted 0 10 5", "admitted 0 ten 5 9 4 1 0 1.5", "maybe 0 10 5 9 4"):
        with pytest.raises(MeteringUnavailableError, match="an admit reply"):
            read("k", "ping", "slot", 1, reply)


async def test_redis_a_settle_under_a_plan_the_config_no_longer_has_is_the_configs_error(
    redis_prefix: str, config: MeteringConfig, clock: FakeClock
) -> None:
    """A charge admitted under a plan and settled by a store whose config has dropped that plan
    (a deploy that removed it): the config's error names the plan, as any lookup of it does; no
    budget is made up for the settle (every plan's budget is packed when the store starts)."""
    store = redis_store(redis_prefix, config, clock)
    without = {name: plan for name, plan in config.plans.items() if name != "sandbox"}
    other = redis_store(redis_prefix, msgspec.structs.replace(config, plans=without), clock)
    try:
        account = await new_account(store, "sandbox")
        admission = await store.admit(account, "ping", 1)
        assert admission.charge is not None
        with pytest.raises(MeteringConfigError, match="unknown plan 'sandbox'"):
            await other.settle(admission.charge, 200)
        assert (await store.settle(admission.charge, 200))[0] == 1
    finally:
        await other.close()
        await store.close()


async def test_redis_a_record_step_that_raises_fails_alone_through_its_own_future(
    redis_prefix: str, config: MeteringConfig, clock: FakeClock
) -> None:
    """`record` hands out its batch's future: a record step that raises inside the script fails
    that future alone with MeteringUnavailableError; the records beside it are written."""
    store = redis_store(redis_prefix, config, clock)
    try:
        account = await new_account(store, "internal")
        broken = [_bulk(arg) for arg in ("ping", "200", "not a number")]
        results = await asyncio.gather(
            store.record(account, "ping", 200, 1),
            store._queue(account.key_id, _RECORD, broken, redis_store_module._recorded),
            store.record(account, "ping", 404, 1),
            return_exceptions=True,
        )
        assert isinstance(results[1], MeteringUnavailableError)
        assert results[0] is UNLIMITED_BALANCE
        assert results[2] is UNLIMITED_BALANCE
        entries = await store.ledger(account.key_id)
        assert [(e.kind, e.status, e.tokens) for e in entries] == [
            ("charge", 200, 1),
            ("charge", 404, 1),
        ]
    finally:
        await store.close()


async def test_redis_record_steps_of_one_call_read_each_key_s_revocation_for_that_key_alone(
    redis_prefix: str, config: MeteringConfig, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The BATCH script reads a key's revocation once per call: every record step of a revoked
    key in the call is refused, a live key's steps beside them are recorded, and a key revoked
    between two calls is refused from the next call on."""
    store = redis_store(redis_prefix, config, clock)
    try:
        live, revoked = await new_account(store, "internal"), await new_account(store, "internal")
        await store.revoke(revoked.key_id)
        await store.client.script_load(BATCH)  # a fresh Redis would answer NOSCRIPT first
        writes = recorded_writes(monkeypatch)
        results = await asyncio.gather(
            store.record(revoked, "ping", 200, 1),
            store.record(live, "ping", 200, 1),
            store.record(revoked, "ping", 200, 1),
            store.record(live, "ping", 404, 1),
        )
        assert [write.count(EVALSHA) for write in writes] == [1]  # one call
        assert results == [None, UNLIMITED_BALANCE, None, UNLIMITED_BALANCE]
        assert await store.ledger(revoked.key_id) == []
        entries = await store.ledger(live.key_id)
        assert [(e.status, e.tokens) for e in entries] == [(200, 1), (404, 1)]
        await store.revoke(live.key_id)
        assert await store.record(live, "ping", 200, 1) is None
        assert len(await store.ledger(live.key_id)) == 2
    finally:
        await store.close()


async def test_redis_steps_over_more_keys_than_it_keeps_packed_stay_exact(
    redis_prefix: str, config: MeteringConfig, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A key's names and repeated arguments are packed once per process, and dropped all at once
    past `PACKED_SIZE`: each step still reaches its own key with its own arguments, also across
    the drops (two kept, five keys, every step of a call queued together)."""
    monkeypatch.setattr(redis_store_module, "PACKED_SIZE", 2)
    store = redis_store(redis_prefix, config, clock)
    try:
        accounts = [await new_account(store, "sandbox") for _ in range(5)]
        admissions = await asyncio.gather(
            *(store.admit(a, f"route-{n}", n + 1) for n, a in enumerate(accounts))
        )
        assert len(store._packed_names) <= 2
        settled = await asyncio.gather(
            *(store.settle(a.charge, 404 + n) for n, a in enumerate(admissions) if a.charge)
        )
        assert [net for net, _ in settled] == [1] * 5  # a 404's net is the minimum charge
        for n, account in enumerate(accounts):
            entries = await store.ledger(account.key_id)
            assert [(e.kind, e.route, e.status, e.tokens) for e in entries] == [
                ("charge", f"route-{n}", 0, n + 1),
                ("credit" if n else "settle", f"route-{n}", 404 + n, -n),
            ]
    finally:
        await store.close()


async def test_redis_a_prefix_and_route_beyond_ascii_reach_redis_as_written(
    config: MeteringConfig, clock: FakeClock
) -> None:
    """Every part of a call is packed by its length in bytes, so a key prefix or a route holding
    characters beyond ASCII (several bytes each) reaches Redis as written."""
    prefix = f"mi:tëst:{uuid.uuid4().hex}:€:"
    store = redis_store(prefix, config, clock)
    try:
        account = await new_account(store, "sandbox")
        admission = await store.admit(account, "prix-ümlaut-€", 2)
        assert admission.charge is not None
        store.release(admission.charge, 200)
        entries = await store.ledger(account.key_id)  # after the released settle
        assert [(e.kind, e.route, e.tokens) for e in entries] == [
            ("charge", "prix-ümlaut-€", 2),
            ("settle", "prix-ümlaut-€", 0),
        ]
        assert await store.client.exists(f"{prefix}acct:{account.key_id}") == 1
    finally:
        await store.close()
        client = redis.Redis.from_url(REDIS_URL)
        names = list(client.scan_iter(match=f"{prefix}*"))
        if names:
            client.delete(*names)
        client.close()


async def admit_again(store: MeteringStore, account: Account) -> Admission:
    return await store.admit(account, "ping", 1)


async def test_redis_unreachable_admit_and_settle_fail_closed(config: MeteringConfig) -> None:
    store = open_store("redis://127.0.0.1:1/0", config)
    try:
        account = Account("a" * 10, "sandbox")
        results = await asyncio.gather(
            *(store.admit(account, "ping", 1) for _ in range(3)), return_exceptions=True
        )
        assert all(isinstance(result, MeteringUnavailableError) for result in results)
        charge = Charge("a" * 10, "ping", "slot", 1, 1, 0, 0.0)
        with pytest.raises(MeteringUnavailableError):
            await store.settle(charge, 200)
    finally:
        await store.close()


class FakeRedis:
    """A server that reads commands and never answers (`hang_up`: closes once it has read some)."""

    def __init__(self, hang_up: bool) -> None:
        self.hang_up = hang_up
        self.received: list[bytes] = []
        self.connections = 0
        self.closed_by_client = 0

    async def serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        while data := await reader.read(65536):
            self.received.append(data)
            if self.hang_up:
                break
        else:
            self.closed_by_client += 1
        writer.close()


@pytest.mark.parametrize("hang_up", [False, True], ids=["silent", "hangs-up"])
async def test_redis_a_lost_reply_fails_closed_is_never_resent_and_the_next_step_reconnects(
    config: MeteringConfig, monkeypatch: pytest.MonkeyPatch, hang_up: bool
) -> None:
    """No reply within REPLY_TIMEOUT, or the connection closed: the group's steps fail closed, the
    connection is dropped, nothing is sent twice (the script may have run), the next step reconnects."""
    monkeypatch.setattr(redis_store_module, "REPLY_TIMEOUT", 0.2)
    fake = FakeRedis(hang_up)
    server = await asyncio.start_server(fake.serve, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    store = open_store(f"redis://127.0.0.1:{port}/0", config)
    account = Account("a" * 10, "sandbox")
    try:
        started = time.monotonic()
        results = await asyncio.gather(
            *(store.admit(account, "ping", 1) for _ in range(3)), return_exceptions=True
        )
        assert all(isinstance(result, MeteringUnavailableError) for result in results)
        assert time.monotonic() - started < (2 if hang_up else 0.2 + 2)
        await asyncio.sleep(0.05)
        assert fake.connections == 1
        assert fake.closed_by_client == (0 if hang_up else 1)
        assert b"".join(fake.received).count(EVALSHA) == 1  # the three steps' one call
        with pytest.raises(MeteringUnavailableError):
            await store.admit(account, "ping", 1)
        assert fake.connections == 2
        assert b"".join(fake.received).count(EVALSHA) == 2
    finally:
        await store.close()
        server.close()
        await server.wait_closed()


def tight_config(config: MeteringConfig, requests_per_window: int = 300) -> MeteringConfig:
    """A plan whose base budget runs out within a test (then pack tokens, then refusals)."""
    plans = {**config.plans, "tight": Plan(monthly_budget=20, daily_cap=40)}
    limits = Limits(requests_per_window=requests_per_window)
    return msgspec.structs.replace(config, plans=plans, limits=limits)


def outcome_of(admission: Admission) -> tuple[Any, ...]:
    """An admission without what differs between stores (key id, slot id)."""
    charge = admission.charge
    spent = None if charge is None else (charge.tokens, charge.base_tokens, charge.pack_tokens)
    return admission.outcome, admission.balance, admission.retry_after, spent


async def counters(store: RedisMeteringStore, account: Account) -> list[Any]:
    fields = ("packs", "month", "month_used", "day", "day_used")
    return await store.client.hmget(store._key("acct", account.key_id), fields)


def rows_of(entries: list[LedgerEntry]) -> list[tuple[Any, ...]]:
    return [
        (e.kind, e.route, e.status, e.tokens, e.base_tokens, e.pack_tokens, e.ts) for e in entries
    ]


async def test_redis_a_batch_of_two_keys_admits_and_settles_leaves_what_one_at_a_time_would(
    redis_prefix: str, config: MeteringConfig, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Admits and settles of two keys in one BATCH call: every step sees the steps before it, and
    each key's counters, ledger and replies are what the same steps one call each leave."""
    config = tight_config(config)
    batched = redis_store(redis_prefix, config, clock)
    single = redis_store(f"{redis_prefix}one:", config, clock)
    try:
        results = {}
        for store in (batched, single):
            first, second = await new_account(store, "tight"), await new_account(store, "tight")
            await store.topup(second.key_id, 10)

            async def run(steps: list[Any], together: bool) -> list[Any]:
                if together:  # each step a task of its own, queued in order as the tasks start
                    return list(await asyncio.gather(*(awaited(step) for step in steps)))
                return [await step() for step in steps]

            together = store is batched
            writes = recorded_writes(monkeypatch)
            admissions = await run(
                [
                    lambda: store.admit(first, "get-indicators", 8),  # noqa: B023
                    lambda: store.admit(second, "get-indicators", 8),  # noqa: B023
                    lambda: store.admit(first, "get-indicators", 8),  # noqa: B023
                    lambda: store.admit(second, "get-indicators", 8),  # noqa: B023
                ],
                together,
            )
            charges = [a.charge for a in admissions]
            mixed = await run(
                [
                    lambda: store.settle(charges[0], 200),  # noqa: B023
                    lambda: store.admit(first, "get-indicators", 8),  # noqa: B023
                    lambda: store.admit(second, "scorecard", 10),  # noqa: B023
                    lambda: store.settle(charges[1], 503),  # noqa: B023
                    lambda: store.settle(charges[2], 404),  # noqa: B023
                    lambda: store.admit(first, "scorecard", 10),  # noqa: B023
                    lambda: store.settle(charges[3], 200),  # noqa: B023
                ],
                together,
            )
            assert [w.count(EVALSHA) for w in writes] == ([1, 1] if together else [1] * 11)
            results[store] = (
                [outcome_of(a) for a in admissions],
                [outcome_of(r) if isinstance(r, Admission) else r for r in mixed],
                [await store.balance(account) for account in (first, second)],
                [await counters(store, account) for account in (first, second)],
                [rows_of(await store.ledger(account.key_id)) for account in (first, second)],
            )
        assert results[batched] == results[single]
        admitted, mixed, balances, counted, _ = results[batched]
        assert [spent for *_, spent in admitted] == [(8, 8, 0), (8, 8, 0), (8, 8, 0), (8, 8, 0)]
        assert mixed[1][0] is Outcome.MONTHLY_LIMIT  # 4 left before the 404's credit
        assert mixed[2][3] == (10, 4, 6)  # the base's last 4, then pack tokens
        assert mixed[5][3] == (10, 10, 0)  # after the credit of 7
        assert [balance.remaining for balance in balances] == [1, 11]
        assert [packs for packs, *_ in counted] == ["0", "4"]
    finally:
        await batched.close()
        await single.close()


async def test_redis_a_step_refused_in_a_batch_leaves_the_steps_after_it_alone(
    redis_prefix: str, config: MeteringConfig, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A rate-limited or over-budget admit inside a batch changes nothing, and the steps after it
    (of its key and of others) run as if it had not been there."""
    store = redis_store(redis_prefix, tight_config(config, requests_per_window=2), clock)
    try:
        first, second = await new_account(store, "tight"), await new_account(store, "tight")
        writes = recorded_writes(monkeypatch)
        admissions = await asyncio.gather(
            store.admit(first, "scorecard", 10),
            store.admit(first, "get-indicators", 25),  # over the monthly budget: refused
            store.admit(first, "get-indicators", 8),
            store.admit(first, "ping", 1),  # a third request in the window: refused
            store.admit(second, "get-indicators", 8),
            store.admit(second, "scorecard", 10),
        )
        assert [w.count(EVALSHA) for w in writes] == [1]
        assert [a.outcome for a in admissions] == [
            Outcome.ADMITTED,
            Outcome.MONTHLY_LIMIT,
            Outcome.ADMITTED,
            Outcome.RATE_LIMITED,
            Outcome.ADMITTED,
            Outcome.ADMITTED,
        ]
        assert admissions[3].retry_after == 60
        remaining = [a.balance.remaining for a in admissions if a.balance]
        assert remaining == [10, 10, 2, 2, 12, 2]  # the refused see the state before them
        for account, spent in ((first, [10, 8]), (second, [8, 10])):
            entries = await store.ledger(account.key_id)
            assert [(e.kind, e.tokens) for e in entries] == [("charge", n) for n in spent]
            assert (await store.balance(account)).remaining == 2
    finally:
        await store.close()


async def test_sqlite_one_group_over_several_keys_writes_each_account_back_exactly(
    tmp_path: Path, config: MeteringConfig, clock: FakeClock
) -> None:
    """Charges and credits of two keys in one group: each key's counters and ledger are what the
    same steps one transaction each would leave (rows are read once and written back once)."""
    store = SqliteMeteringStore(tmp_path / "metering.sqlite3", config, clock)
    try:
        first, second = await new_account(store), await new_account(store)
        await store.topup(second.key_id, 5)
        with lock_held(store):
            admits = [
                asyncio.ensure_future(store.admit(account, "get-indicators", 8))
                for account in (first, second, first, second)
            ]
            await asyncio.sleep(0.05)
        admissions = await asyncio.gather(*admits)
        charges = [a.charge for a in admissions]
        assert all(charges)
        with lock_held(store):
            settles = [
                asyncio.ensure_future(store.settle(charge, status))
                for charge, status in zip(charges, (200, 503, 404, 200), strict=True)
                if charge is not None
            ]
            await asyncio.sleep(0.05)
        settled = await asyncio.gather(*settles)
        assert [net for net, _ in settled] == [8, 1, 1, 8]
        first_balance, second_balance = await store.balance(first), await store.balance(second)
        assert settled[2][1] == first_balance  # the last settle of each key saw the final state
        assert settled[3][1] == second_balance
        assert first_balance.remaining_today == 1000 - 9
        assert first_balance.remaining == 3000 - 9
        assert second_balance.remaining_today == 1000 - 9
        assert second_balance.remaining == 3000 + 5 - 9
        for account, balance, packs in ((first, first_balance, 0), (second, second_balance, 5)):
            entries = await store.ledger(account.key_id)
            spent = sum(e.tokens for e in entries if e.kind != "topup")
            assert balance.remaining == 3000 + packs - spent
            order = ["settle", "credit"] if account is first else ["credit", "settle"]
            assert [e.kind for e in entries if e.kind != "topup"] == ["charge", "charge", *order]
    finally:
        await store.close()


async def test_sqlite_the_wal_restarts_under_steady_load_instead_of_growing(
    tmp_path: Path, config: MeteringConfig, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ten tasks record without pause, so a commit lands every loop iteration: the thread's
    checkpoints must still bring the WAL back to its start (a passive one never completes under
    such load and the file grew by the size of every commit).

    A restart is read where SQLite writes it, the WAL header's checkpoint sequence number (it
    counts the times the log was written from its start again), not inferred from the file's size:
    how many groups land while the thread checkpoints depends on how busy the machine is."""
    monkeypatch.setattr(sqlite_store, "CHECKPOINT_EVERY", 16)
    path = tmp_path / "metering.sqlite3"
    store = SqliteMeteringStore(path, config)
    try:
        account = await new_account(store, "internal")
        wal = path.with_name(path.name + "-wal")
        sizes: list[int] = []
        restarts: set[int] = set()

        async def record(count: int) -> None:
            for _ in range(count):
                assert await store.record(account, "ping", 200, 1) is not None
                sizes.append(wal.stat().st_size)
                restarts.add(_wal_checkpoint_sequence(wal))

        await asyncio.gather(*(record(10) for _ in range(10)))  # about 10 groups, no checkpoint yet
        per_group = max(sizes) / 10
        sizes.clear()
        restarts.clear()
        await asyncio.gather(*(record(600) for _ in range(10)))  # about 600 groups
        # Never restarted, the WAL holds all 600 groups and its sequence number never moves.
        assert len(restarts) >= 3, restarts
        assert max(sizes) < per_group * 400, (max(sizes), per_group)
        assert len(await store.ledger(account.key_id)) == 6100
    finally:
        await store.close()


def _wal_checkpoint_sequence(wal: Path) -> int:
    """The WAL header's checkpoint sequence number (bytes 12 to 16, big-endian): SQLite adds one
    each time the log restarts."""
    with wal.open("rb") as file:
        return int.from_bytes(file.read(16)[12:16], "big")
