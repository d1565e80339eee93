"""The warehouse store: new immutable files per write, committed through the manifest under a lock."""

from __future__ import annotations

import multiprocessing
import os
import time
from dataclasses import replace
from pathlib import Path

import polars as pl
import pyarrow.parquet as pq
import pytest

from pipelines.catalog import INSTRUMENTS, TABLES, read_manifest
from pipelines.catalog.state import INDICATOR_STATE, STATE_TABLES
from pipelines.catalog.versions import record_path
from pipelines.warehouse.store import WHOLE_TABLE, Warehouse
from tests.pipelines.warehouse.conftest import ONLY_CURRENT, instruments_frame


def test_round_trip_reads_back_each_partition_as_written(warehouse: Warehouse) -> None:
    warehouse.write(INSTRUMENTS, "crypto", instruments_frame("crypto", "BTC", "ETH"))
    warehouse.write(INSTRUMENTS, "forex", instruments_frame("forex", "EURUSD"))
    assert warehouse.read(INSTRUMENTS, ["crypto"])["symbol"].to_list() == ["BTC", "ETH"]
    assert warehouse.read(INSTRUMENTS, ["forex"])["symbol"].to_list() == ["EURUSD"]
    assert warehouse.read(INSTRUMENTS).height == 3


def test_a_write_lands_in_the_documented_layout(warehouse: Warehouse) -> None:
    commit = warehouse.write(INSTRUMENTS, "crypto", instruments_frame("crypto", "BTC"))
    relative = commit.path.relative_to(warehouse.root)
    assert relative.parts[:2] == ("instruments", "market=crypto")
    assert relative.suffix == ".parquet"


def codecs(path: Path) -> set[str]:
    metadata = pq.ParquetFile(path).metadata
    return {
        metadata.row_group(g).column(c).compression
        for g in range(metadata.num_row_groups)
        for c in range(metadata.num_columns)
    }


def test_files_are_zstd_compressed(warehouse: Warehouse) -> None:
    commit = warehouse.write(INSTRUMENTS, "crypto", instruments_frame("crypto", "BTC"))
    assert codecs(commit.path) == {"ZSTD"}


def test_a_table_the_catalog_says_is_not_compressed_is_written_uncompressed(
    warehouse: Warehouse,
) -> None:
    """Only the indicators' carried state: high-entropy floats zstd barely shrinks."""
    plain = replace(INSTRUMENTS, compressed=False)
    commit = warehouse.write(plain, "crypto", instruments_frame("crypto", "BTC"))
    assert codecs(commit.path) == {"UNCOMPRESSED"}
    assert warehouse.read(plain, ["crypto"])["symbol"].to_list() == ["BTC"]
    assert [t.name for t in (*TABLES.values(), *STATE_TABLES.values()) if not t.compressed] == [
        INDICATOR_STATE.name
    ]


def test_a_write_never_changes_a_file_a_reader_holds(warehouse: Warehouse) -> None:
    first = warehouse.write(INSTRUMENTS, "crypto", instruments_frame("crypto", "BTC"))
    before = first.path.read_bytes()
    second = warehouse.write(INSTRUMENTS, "crypto", instruments_frame("crypto", "ETH", "SOL"))
    assert second.path != first.path
    assert first.path.read_bytes() == before
    assert pl.read_parquet(first.path)["symbol"].to_list() == ["BTC"]


def test_manifest_version_increases_with_every_write(warehouse: Warehouse) -> None:
    versions = [
        warehouse.write(INSTRUMENTS, "crypto", instruments_frame("crypto", "BTC")).version
        for _ in range(3)
    ]
    assert versions == sorted(set(versions))
    manifest = read_manifest(warehouse.root)
    assert manifest is not None
    assert manifest.version == versions[-1]


def test_manifest_version_never_goes_back_when_the_clock_does(
    warehouse: Warehouse, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = warehouse.write(INSTRUMENTS, "crypto", instruments_frame("crypto", "BTC")).version
    monkeypatch.setattr(time, "time_ns", lambda: 1)
    assert (
        warehouse.write(INSTRUMENTS, "crypto", instruments_frame("crypto", "BTC")).version > first
    )


def test_a_crash_between_file_and_manifest_leaves_the_old_version_served(
    warehouse: Warehouse, monkeypatch: pytest.MonkeyPatch
) -> None:
    warehouse.write(INSTRUMENTS, "crypto", instruments_frame("crypto", "BTC"))
    before = read_manifest(warehouse.root)

    def crash(*_: object) -> None:
        raise OSError("killed")

    monkeypatch.setattr("pipelines.warehouse.store.write_manifest", crash)
    with pytest.raises(OSError, match="killed"):
        warehouse.write(INSTRUMENTS, "crypto", instruments_frame("crypto", "ETH"))
    assert read_manifest(warehouse.root) == before
    assert warehouse.read(INSTRUMENTS, ["crypto"])["symbol"].to_list() == ["BTC"]
    assert len(list((warehouse.root / "instruments" / "market=crypto").glob("*.parquet"))) == 2


def test_a_partition_holding_another_markets_rows_is_refused(warehouse: Warehouse) -> None:
    with pytest.raises(ValueError, match="holds rows of markets"):
        warehouse.write(INSTRUMENTS, "crypto", instruments_frame("forex", "EURUSD"))


def test_a_whole_table_write_replaces_every_partition(warehouse: Warehouse) -> None:
    warehouse.write(INSTRUMENTS, "crypto", instruments_frame("crypto", "BTC"))
    mixed = pl.concat([instruments_frame("crypto", "ETH"), instruments_frame("forex", "EURUSD")])
    warehouse.write(INSTRUMENTS, WHOLE_TABLE, mixed)
    manifest = read_manifest(warehouse.root)
    assert manifest is not None
    assert list(manifest.tables["instruments"]) == [WHOLE_TABLE]
    assert warehouse.read(INSTRUMENTS)["symbol"].to_list() == ["ETH", "EURUSD"]
    with pytest.raises(ValueError, match="stored whole"):
        warehouse.write(INSTRUMENTS, "crypto", instruments_frame("crypto", "BTC"))


def test_reading_a_partition_never_written_names_it(warehouse: Warehouse) -> None:
    with pytest.raises(LookupError, match="stocks"):
        warehouse.read(INSTRUMENTS, ["stocks"])


def test_reading_an_unwritten_table_whole_gives_an_empty_typed_frame(warehouse: Warehouse) -> None:
    assert warehouse.read(INSTRUMENTS).schema == INSTRUMENTS.schema


def test_expiry_removes_only_unneeded_files_once_past_the_grace(warehouse: Warehouse) -> None:
    old = warehouse.write(INSTRUMENTS, "crypto", instruments_frame("crypto", "BTC"))
    current = warehouse.write(INSTRUMENTS, "crypto", instruments_frame("crypto", "ETH"))
    crashed = current.path.with_name(".123-dead.parquet.tmp")
    crashed.write_bytes(b"half")
    os.utime(crashed, (time.time() - 86_400,) * 2)
    grace = warehouse.gc_grace.total_seconds()
    first = warehouse.expire(ONLY_CURRENT)  # the old version expires: its grace starts now
    assert [v.version for v in first.expired] == [old.version]
    assert first.removed == (str(crashed.relative_to(warehouse.root)),)
    assert old.path.exists()
    assert warehouse.expire(ONLY_CURRENT, now=time.time() + grace - 5).removed == ()
    removed = warehouse.expire(ONLY_CURRENT, now=time.time() + grace + 5).removed
    assert removed == tuple(sorted([_relative(warehouse, old.path), record_path(old.version)]))
    assert current.path.exists()


def test_a_commit_deletes_nothing_a_past_version_names(graceless_warehouse: Warehouse) -> None:
    """Every committed version is retained until expiry says otherwise, so a commit keeps the
    files it retires, however old they are."""
    old = graceless_warehouse.write(INSTRUMENTS, "crypto", instruments_frame("crypto", "BTC"))
    long_ago = time.time() - 86_400
    os.utime(old.path, (long_ago, long_ago))
    graceless_warehouse.write(INSTRUMENTS, "crypto", instruments_frame("crypto", "ETH"))
    assert old.path.exists()


def test_expiry_deletes_an_expired_versions_files_past_the_grace(
    graceless_warehouse: Warehouse,
) -> None:
    old = graceless_warehouse.write(INSTRUMENTS, "crypto", instruments_frame("crypto", "BTC"))
    time.sleep(0.01)
    graceless_warehouse.write(INSTRUMENTS, "crypto", instruments_frame("crypto", "ETH"))
    expiry = graceless_warehouse.expire(ONLY_CURRENT, now=time.time() + 1)
    relative = _relative(graceless_warehouse, old.path)
    assert expiry.removed == tuple(sorted([relative, record_path(old.version)]))
    assert expiry.freed_bytes > 0


def _relative(warehouse: Warehouse, path: Path) -> str:
    return str(path.relative_to(warehouse.root))


def _write_partitions(root: str, writer: int, count: int) -> None:
    store = Warehouse(root=Path(root))
    for i in range(count):
        partition = f"w{writer}-{i}"
        store.write(INSTRUMENTS, partition, instruments_frame(partition, "BTC"))


def test_concurrent_writers_in_two_processes_lose_no_update(tmp_path: Path) -> None:
    # Every write adds a partition no other write touches: a lost update would drop one for good.
    root = tmp_path / "warehouse"
    context = multiprocessing.get_context("spawn")
    workers = [
        context.Process(target=_write_partitions, args=(str(root), writer, 20)) for writer in (1, 2)
    ]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=120)
    assert [w.exitcode for w in workers] == [0, 0]
    manifest = read_manifest(root)
    assert manifest is not None
    assert len(manifest.tables["instruments"]) == 40
    assert Warehouse(root=root).read(INSTRUMENTS).height == 40
