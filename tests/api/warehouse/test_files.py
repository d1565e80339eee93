"""A worker's warehouse files: fetched once into a bounded disk cache (or read in place locally).

Rules: a file is fetched once whatever the number of versions that use it; the cache stays within
its bound by evicting the least recently used files no live version uses, and never one a live
version uses; each worker process holds a slot of its own in a shared directory, and a restarted
worker finds its slot's files warm; a fetch cut short leaves nothing that is ever read.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest

from api.warehouse.files import FileCache, InPlaceFiles
from pipelines.catalog import LocalStorage


@pytest.fixture
def source(tmp_path: Path) -> LocalStorage:
    """A warehouse root holding three Parquet files of 10, 20 and 30 rows (any storage serves:
    the cache reads through the storage's pyarrow filesystem)."""
    root = tmp_path / "warehouse"
    for rows in (10, 20, 30):
        path = root / "t" / f"f{rows}.parquet"
        path.parent.mkdir(parents=True, exist_ok=True)
        pl.DataFrame({"x": list(range(rows))}).write_parquet(path)
    return LocalStorage(root)


def size_of(storage: LocalStorage, relative: str) -> int:
    return (storage.root / relative).stat().st_size


def test_a_file_is_fetched_once_and_read_from_the_cache_after(
    source: LocalStorage, tmp_path: Path
) -> None:
    cache = FileCache(source, tmp_path / "cache")
    first = cache.localize(["t/f10.parquet", "t/f20.parquet"])
    assert (first.fetched_files, first.fetched_bytes) == (
        2,
        size_of(source, "t/f10.parquet") + size_of(source, "t/f20.parquet"),
    )
    assert first.files["t/f20.parquet"].rows == 20
    assert pl.read_parquet(first.files["t/f10.parquet"].path)["x"].sum() == 45
    second = cache.localize(["t/f20.parquet", "t/f30.parquet"])
    assert (second.fetched_files, second.fetched_bytes) == (1, size_of(source, "t/f30.parquet"))
    cache.close()


def test_eviction_keeps_the_cache_within_its_bound_and_spares_live_files(
    source: LocalStorage, tmp_path: Path
) -> None:
    files = ["t/f10.parquet", "t/f20.parquet", "t/f30.parquet"]
    bound = size_of(source, files[1]) + size_of(source, files[2])
    cache = FileCache(source, tmp_path / "cache", max_bytes=bound)
    local = cache.localize(files).files
    cache.release(live=files[1:])
    assert cache.size <= bound
    assert not Path(local[files[0]].path).exists()  # least recently used and not live
    assert all(Path(local[f].path).exists() for f in files[1:])
    cache.release(live=files[1:2])  # nothing over the bound: nothing more goes
    assert Path(local[files[2]].path).exists()
    cache.max_bytes = 1
    cache.release(live=files[1:2])
    assert Path(local[files[1]].path).exists()  # live: kept even over the bound
    assert not Path(local[files[2]].path).exists()
    assert cache.localize(files[:1]).fetched_files == 1  # evicted: fetched again when needed
    cache.close()


def test_least_recently_used_files_go_first(source: LocalStorage, tmp_path: Path) -> None:
    cache = FileCache(source, tmp_path / "cache", max_bytes=size_of(source, "t/f30.parquet") * 2)
    cache.localize(["t/f10.parquet"])
    cache.localize(["t/f20.parquet"])
    cache.localize(["t/f10.parquet", "t/f30.parquet"])  # f10 used again: f20 is the oldest now
    cache.release(live=[])
    assert cache.localize(["t/f10.parquet", "t/f30.parquet"]).fetched_files == 0
    assert cache.localize(["t/f20.parquet"]).fetched_files == 1
    cache.close()


def test_each_process_holds_its_own_slot_and_a_restart_finds_its_files_warm(
    source: LocalStorage, tmp_path: Path
) -> None:
    root = tmp_path / "cache"
    first = FileCache(source, root)
    second = FileCache(source, root)  # another holder (a second worker): another slot
    assert first.directory != second.directory
    first.localize(["t/f10.parquet", "t/f20.parquet"])
    first.close()
    restarted = FileCache(source, root)  # the slot is free again, its files still there
    assert restarted.directory == first.directory
    again = restarted.localize(["t/f10.parquet", "t/f20.parquet"])
    assert again.fetched_files == 0
    assert again.files["t/f20.parquet"].rows == 20  # read from the footer of the file found
    second.close()
    restarted.close()


def test_a_slot_held_by_another_live_process_is_never_taken(
    source: LocalStorage, tmp_path: Path
) -> None:
    root = tmp_path / "cache"
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, time; from pathlib import Path; "
            "from api.warehouse.files import FileCache; from pipelines.catalog import LocalStorage; "
            f"c = FileCache(LocalStorage(Path({str(source.root)!r})), Path({str(root)!r})); "
            "print(c.directory.name, flush=True); time.sleep(60)",
        ],
        stdout=subprocess.PIPE,
        text=True,
        cwd=Path(__file__).parents[3],
        env={**os.environ, "PYTHONPATH": str(Path(__file__).parents[3])},
    )
    try:
        assert holder.stdout is not None
        held = holder.stdout.readline().strip()
        assert held == "slot-0"
        mine = FileCache(source, root)
        assert mine.directory.name == "slot-1"
        mine.close()
    finally:
        holder.kill()
        holder.communicate()


def test_a_fetch_cut_short_is_deleted_at_start_and_never_read(
    source: LocalStorage, tmp_path: Path
) -> None:
    root = tmp_path / "cache"
    partial = root / "slot-0" / "t" / "f10.parquet.part"
    partial.parent.mkdir(parents=True)
    partial.write_bytes(b"PAR1 half of a file")
    cache = FileCache(source, root)
    assert not partial.exists()
    assert cache.localize(["t/f10.parquet"]).fetched_files == 1
    cache.close()


def test_a_manifest_path_outside_the_warehouse_is_refused(
    source: LocalStorage, tmp_path: Path
) -> None:
    cache = FileCache(source, tmp_path / "cache")
    with pytest.raises(ValueError, match="leaves the warehouse"):
        cache.localize(["../warehouse/t/f10.parquet"])
    cache.close()


def test_a_temporary_cache_removes_its_directory_on_close(source: LocalStorage) -> None:
    cache = FileCache.temporary(source)
    cache.localize(["t/f10.parquet"])
    directory = cache.directory
    assert directory.exists()
    cache.close()
    assert not directory.parent.exists()


def test_a_local_warehouse_is_read_in_place_and_each_footer_once(source: LocalStorage) -> None:
    files = InPlaceFiles(source)
    local = files.localize(["t/f10.parquet"])
    assert local.files["t/f10.parquet"].path == str(source.root.resolve() / "t/f10.parquet")
    assert (local.fetched_files, local.fetched_bytes) == (0, 0)
    (source.root / "t/f10.parquet").unlink()  # remembered: its footer is not read again
    assert files.localize(["t/f10.parquet"]).files["t/f10.parquet"].rows == 10
    files.release(live=[])
    with pytest.raises(FileNotFoundError):
        files.localize(["t/f10.parquet"])
