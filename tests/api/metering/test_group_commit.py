"""Group commit: many requests' admits and settles share one transaction (SQLite) or one round trip
(Redis), yet each step stays atomic, nothing overspends, and no request goes on before its step is
durable; a group that fails to commit serves nobody."""

from __future__ import annotations

import asyncio
import sqlite3
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import msgspec
import pytest

from api.metering import redis_store as redis_store_module
from api.metering.config import Limits, MeteringConfig
from api.metering.model import Account, Admission, Charge, MeteringUnavailableError, Outcome
from api.metering.redis_store import ADMIT, RedisMeteringStore, _Script
from api.metering.resp import RespProtocol
from api.metering.sqlite_store import SqliteMeteringStore
from api.metering.store import MeteringStore, open_store

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


async def test_sqlite_the_loop_never_waits_for_another_process_lock_and_groups_keep_order(
    tmp_path: Path, config: MeteringConfig, clock: FakeClock
) -> None:
    """While another connection holds the write lock, groups go to the store's thread in order
    (the loop keeps running: a later group is queued meanwhile), then commit in that order."""
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


# -- Redis: one pipelined round trip per group ----------------------------------------------------


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


async def test_redis_steps_queued_together_go_out_in_one_write(
    redis_prefix: str, config: MeteringConfig, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = redis_store(redis_prefix, config, clock)
    try:
        account = await new_account(store, "internal")
        writes = recorded_writes(monkeypatch)
        admissions = await asyncio.gather(*(store.admit(account, "ping", 1) for _ in range(8)))
        assert [write.count(EVALSHA) for write in writes] == [8]
        assert all(a.outcome is Outcome.ADMITTED for a in admissions)
        settled = await asyncio.gather(
            *(store.settle(a.charge, 404) for a in admissions if a.charge)
        )
        assert [write.count(EVALSHA) for write in writes] == [8, 8]
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
        fresh = f"{ADMIT}\n-- {uuid.uuid4().hex}\n"  # a script this Redis has never seen
        store._admit_script = _Script.of(fresh)
        writes = recorded_writes(monkeypatch)
        admissions = await asyncio.gather(*(store.admit(account, "ping", 1) for _ in range(3)))
        assert all(a.outcome is Outcome.ADMITTED for a in admissions)
        # The group, then one SCRIPT LOAD ahead of the three steps sent once more, in one write.
        assert [(w.count(SCRIPT_LOAD), w.count(EVALSHA)) for w in writes] == [(0, 3), (1, 3)]
        assert writes[1].index(SCRIPT_LOAD) < writes[1].index(EVALSHA)
        entries = await store.ledger(account.key_id)
        assert [(e.kind, e.tokens) for e in entries] == [("charge", 1)] * 3
        assert (await store.balance(account)).remaining_today == 997
    finally:
        await store.close()


async def test_redis_an_error_reply_fails_only_its_step(
    redis_prefix: str, config: MeteringConfig, clock: FakeClock
) -> None:
    store = redis_store(redis_prefix, config, clock)
    try:
        account = await new_account(store, "internal")
        failing = _Script.of(f"return redis.error_reply('ERR boom {uuid.uuid4().hex}')")
        admit = store.admit(account, "ping", 1)
        results = await asyncio.gather(
            admit, store._eval(failing, [], []), admit_again(store, account), return_exceptions=True
        )
        assert isinstance(results[1], MeteringUnavailableError)
        assert "boom" in str(results[1])
        assert [r.outcome for r in results if isinstance(r, Admission)] == [Outcome.ADMITTED] * 2
        assert (await store.admit(account, "ping", 1)).charge is not None  # the connection stays
    finally:
        await store.close()


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
        assert b"".join(fake.received).count(EVALSHA) == 3
        with pytest.raises(MeteringUnavailableError):
            await store.admit(account, "ping", 1)
        assert fake.connections == 2
        assert b"".join(fake.received).count(EVALSHA) == 4
    finally:
        await store.close()
        server.close()
        await server.wait_closed()


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
