"""The version log: every commit keeps a record of what it served; expiry keeps exactly what the
retention says (decisions.md, "Point in time"), and deletes only what no retained version names."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from api.warehouse import DuckDBSnapshot
from pipelines.catalog import INSTRUMENTS, LocalStorage, read_manifest
from pipelines.catalog.manifest import LoggedVersion
from pipelines.catalog.state import PRICE_FILES
from pipelines.catalog.versions import (
    Retention,
    current_at,
    read_record,
    record_path,
    rfc3339,
)
from pipelines.warehouse.commits import TableWrite
from pipelines.warehouse.store import Warehouse
from tests.pipelines.warehouse.conftest import ONLY_CURRENT, instruments_frame

START = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


class Clock:
    """A clock the test moves by hand."""

    def __init__(self, at: datetime = START) -> None:
        self.at = at

    def __call__(self) -> datetime:
        return self.at

    def advance(self, **delta: float) -> None:
        self.at += timedelta(**delta)


def entry(version: int, at: datetime) -> LoggedVersion:
    return LoggedVersion(version, at.isoformat(timespec="milliseconds"))


def test_retention_keeps_every_version_of_the_window_then_each_days_last() -> None:
    now = datetime(2026, 3, 20, 12, tzinfo=UTC)
    log = [
        entry(3, datetime(2025, 12, 19, 23, tzinfo=UTC)),  # 90.5 days ago: beyond the 90
        entry(1, datetime(2026, 1, 1, 10, tzinfo=UTC)),  # 78 days ago, not its day's last
        entry(2, datetime(2026, 1, 1, 23, tzinfo=UTC)),  # 78 days ago, its day's last
        entry(4, datetime(2026, 3, 10, 9, tzinfo=UTC)),  # 10 days ago, not its day's last
        entry(5, datetime(2026, 3, 10, 18, tzinfo=UTC)),  # 10 days ago, its day's last
        entry(6, datetime(2026, 3, 15, 1, tzinfo=UTC)),  # inside the 7 days
        entry(7, datetime(2026, 3, 15, 2, tzinfo=UTC)),  # inside the 7 days
    ]
    kept = Retention(keep_all_days=7, retain_days=90).kept(log, now)
    assert [e.version for e in kept] == [2, 5, 6, 7]  # 3 is 91 days old


def test_retention_always_keeps_the_current_version() -> None:
    long_ago = entry(1, datetime(2025, 1, 1, tzinfo=UTC))
    assert Retention(1, 1).kept([long_ago], datetime(2026, 1, 1, tzinfo=UTC)) == (long_ago,)
    assert ONLY_CURRENT.kept([long_ago, entry(2, START)], START) == (entry(2, START),)


@given(
    gaps=st.lists(st.floats(min_value=0, max_value=60), min_size=1, max_size=40),
    later=st.floats(min_value=0, max_value=200),
)
def test_retention_is_monotone_an_expired_version_never_comes_back(
    gaps: list[float], later: float
) -> None:
    at, log = START, []
    for version, gap in enumerate(gaps):
        at += timedelta(hours=gap)
        log.append(entry(version, at))
    retention = Retention(keep_all_days=2, retain_days=10)
    now = at + timedelta(hours=1)
    kept = retention.kept(log, now)
    assert set(retention.kept(log, now + timedelta(hours=later))) <= set(kept)
    assert retention.kept(kept, now) == kept  # pruning again changes nothing


def test_current_at_is_the_newest_version_published_by_the_instant() -> None:
    log = [entry(1, START), entry(2, START + timedelta(hours=1))]
    assert current_at(log, START - timedelta(seconds=1)) is None
    assert current_at(log, START) == log[0]
    assert current_at(log, START + timedelta(minutes=59)) == log[0]
    assert current_at(log, START + timedelta(days=9)) == log[1]


def test_rfc3339_states_an_instant_in_utc_with_milliseconds() -> None:
    assert rfc3339("2026-03-03T00:31:02.456+00:00") == "2026-03-03T00:31:02.456Z"
    assert rfc3339("2026-03-03T02:31:02.4+02:00") == "2026-03-03T00:31:02.400Z"


def test_a_commit_records_its_served_tables_its_run_and_what_changed(tmp_path: Path) -> None:
    warehouse = Warehouse(tmp_path / "warehouse")
    first = warehouse.write(INSTRUMENTS, "crypto", instruments_frame("crypto", "BTC"))
    files = warehouse.write_file(PRICE_FILES, "crypto", PRICE_FILES.empty())
    state = TableWrite(PRICE_FILES.name, "crypto", {"crypto": files})
    entry_ = warehouse.write_file(INSTRUMENTS, "forex", instruments_frame("forex", "EURUSD"))
    forex = TableWrite(INSTRUMENTS.name, "forex", {"forex": entry_})
    published = warehouse.commit([state, forex], run_id="run-7")
    manifest = read_manifest(warehouse.root)
    assert manifest is not None
    assert [v.version for v in manifest.log] == [first.version, published.version]
    record = read_record(warehouse.storage, published.version)
    assert record is not None
    assert record.run_id == "run-7"
    assert record.changed == {"forex": ["instruments"]}  # internal state is not served
    assert PRICE_FILES.name not in record.manifest.tables
    assert record.manifest.tables[INSTRUMENTS.name] == manifest.tables[INSTRUMENTS.name]
    assert record.published == manifest.updated_at


def test_a_run_that_changes_nothing_logs_no_version(tmp_path: Path) -> None:
    warehouse = Warehouse(tmp_path / "warehouse")
    warehouse.write(INSTRUMENTS, "crypto", instruments_frame("crypto", "BTC"))
    before = read_manifest(warehouse.root)
    assert before is not None
    same = TableWrite(INSTRUMENTS.name, "crypto", before.partitions(INSTRUMENTS.name, "crypto"))
    assert not warehouse.commit([same]).published
    assert read_manifest(warehouse.root) == before
    assert len(list((warehouse.root / "_versions").iterdir())) == 1


def test_a_reader_holding_a_past_version_keeps_reading_it_through_expiry(tmp_path: Path) -> None:
    clock = Clock()
    warehouse = Warehouse(tmp_path / "warehouse", clock=clock)
    old = warehouse.write(INSTRUMENTS, "crypto", instruments_frame("crypto", "OLD"))
    warehouse.write(INSTRUMENTS, "crypto", instruments_frame("crypto", "NEW"))
    record = read_record(warehouse.storage, old.version)
    assert record is not None
    held = DuckDBSnapshot.in_place(warehouse.root, record.manifest)
    clock.advance(days=1)
    expiry = warehouse.expire(ONLY_CURRENT)
    assert [v.version for v in expiry.expired] == [old.version]
    assert held.query("select symbol from instruments")["symbol"].to_list() == ["OLD"]
    clock.advance(seconds=warehouse.gc_grace.total_seconds() + 1)
    assert _relative(old.path, warehouse) in warehouse.expire(ONLY_CURRENT).removed
    assert not old.path.exists()


Step = tuple[str, float]


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    steps=st.lists(
        st.one_of(
            st.tuples(st.just("commit"), st.integers(0, 2).map(float)),
            st.tuples(st.just("advance"), st.floats(min_value=0.1, max_value=80)),
            st.tuples(st.just("expire"), st.just(0.0)),
        ),
        min_size=1,
        max_size=30,
    )
)
def test_expiry_keeps_exactly_the_retained_versions_and_their_files(
    tmp_path_factory: pytest.TempPathFactory, steps: list[Step]
) -> None:
    """After any sequence of commits, clock advances and expiries: the log is what the retention
    keeps of every version ever committed, each retained version's record and files exist, and
    nothing only an expired version named is left."""
    clock = Clock()
    root = tmp_path_factory.mktemp("versions") / "warehouse"
    warehouse = Warehouse(root, gc_grace=timedelta(0), clock=clock)
    retention = Retention(keep_all_days=1, retain_days=4)
    history: list[LoggedVersion] = []
    for number, (action, value) in enumerate([*steps, ("expire", 0.0)]):
        if action == "commit":
            market = ("crypto", "forex", "stocks")[int(value)]
            warehouse.write(INSTRUMENTS, market, instruments_frame(market, f"S{number}"))
            manifest = read_manifest(root)
            assert manifest is not None
            history.append(manifest.log[-1])
        elif action == "advance":
            clock.advance(hours=value)
        else:
            warehouse.expire(retention)
            _check_retained(warehouse, retention.kept(history, clock()))


def _check_retained(warehouse: Warehouse, expected: tuple[LoggedVersion, ...]) -> None:
    manifest = read_manifest(warehouse.root)
    if manifest is None:
        assert expected == ()
        return
    assert manifest.log == expected
    named = {record_path(v.version) for v in expected}
    for logged in expected:
        record = read_record(LocalStorage(warehouse.root), logged.version)
        assert record is not None, f"version {logged.version} lost its record"
        assert all((warehouse.root / path).exists() for path in record.files())
        named |= record.files()
    stored = {
        _relative(path, warehouse)
        for path in [*warehouse.root.glob("*/market=*/*"), *warehouse.root.glob("_versions/*")]
    }
    assert stored == named  # an expired version's files are gone (no grace here)


def _relative(path: Path, warehouse: Warehouse) -> str:
    return str(path.relative_to(warehouse.root))
