"""The warehouse files a worker reads: fetched once per host into a bounded disk cache shared by
its worker processes (or read in place locally).

Rules: an object is fetched once per host, whatever the number of versions or workers that use
it; a worker reads hard links of its own, so no other worker can take a file from under it; the
shared copies stay within the bound by evicting the least recently used ones no worker links, and
never one a live version uses; a fetch cut short is never read.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path

import polars as pl
import pytest

from api.warehouse.files import FileCache, InPlaceFiles
from pipelines.catalog import LocalStorage

FILES = ["t/f10.parquet", "t/f20.parquet", "t/f30.parquet"]
ROOT = Path(__file__).parents[3]


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


def size_of(storage: LocalStorage, *relatives: str) -> int:
    return sum((storage.root / relative).stat().st_size for relative in relatives)


def shared(cache: FileCache, relative: str) -> Path:
    return cache.objects / relative


def test_a_file_is_fetched_once_and_read_from_the_cache_after(
    source: LocalStorage, tmp_path: Path
) -> None:
    cache = FileCache(source, tmp_path / "cache")
    first = cache.localize(FILES[:2])
    assert (first.fetched_files, first.fetched_bytes) == (2, size_of(source, *FILES[:2]))
    assert first.files[FILES[1]].rows == 20
    assert Path(first.files[FILES[0]].path).is_relative_to(cache.directory)
    assert pl.read_parquet(first.files[FILES[0]].path)["x"].sum() == 45
    second = cache.localize(FILES[1:])
    assert (second.fetched_files, second.fetched_bytes) == (1, size_of(source, FILES[2]))
    cache.close()


def test_a_second_worker_links_what_the_host_fetched_and_fetches_nothing(
    source: LocalStorage, tmp_path: Path
) -> None:
    first = FileCache(source, tmp_path / "cache")
    second = FileCache(source, tmp_path / "cache")  # another worker process: another slot
    assert first.directory != second.directory
    first.localize(FILES)
    found = second.localize(FILES)
    assert (found.fetched_files, found.fetched_bytes) == (0, 0)
    assert found.files[FILES[2]].rows == 30  # its footer, read from the linked copy
    assert os.path.samefile(found.files[FILES[0]].path, shared(first, FILES[0]))
    first.close()
    second.close()


def test_workers_needing_the_same_new_file_at_once_fetch_it_once(
    source: LocalStorage, tmp_path: Path
) -> None:
    caches = [FileCache(source, tmp_path / "cache") for _ in range(4)]
    fetched: list[int] = []
    start = threading.Barrier(len(caches))

    def localize(cache: FileCache) -> None:
        start.wait()
        fetched.append(cache.localize(FILES).fetched_files)

    threads = [threading.Thread(target=localize, args=(c,)) for c in caches]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sum(fetched) == len(FILES)
    for cache in caches:
        cache.close()


def test_a_file_no_live_version_uses_leaves_the_slot_and_its_copy_waits_for_the_bound(
    source: LocalStorage, tmp_path: Path
) -> None:
    cache = FileCache(source, tmp_path / "cache", max_bytes=size_of(source, *FILES))
    local = cache.localize(FILES).files
    cache.release(live=FILES[1:])
    assert not Path(local[FILES[0]].path).exists()  # out of the worker's slot at once
    assert shared(cache, FILES[0]).exists()  # the host keeps it: the bound allows it
    assert cache.localize(FILES[:1]).fetched_files == 0  # used again: linked, not fetched
    cache.close()


def test_eviction_keeps_the_copies_within_the_bound_and_spares_what_a_worker_uses(
    source: LocalStorage, tmp_path: Path
) -> None:
    bound = size_of(source, *FILES[1:])
    cache = FileCache(source, tmp_path / "cache", max_bytes=bound)
    other = FileCache(source, tmp_path / "cache", max_bytes=bound)
    cache.localize(FILES)
    other.localize(FILES[:1])  # another worker's live version uses f10
    cache.release(live=FILES[1:])
    assert shared(cache, FILES[0]).exists()  # linked by the other worker: never evicted
    other.release(live=[])
    assert not shared(cache, FILES[0]).exists()  # nobody links it now: evicted
    assert cache.size <= bound
    cache.max_bytes = other.max_bytes = 1
    cache.release(live=FILES[1:2])
    assert shared(cache, FILES[1]).exists()  # live: kept even over the bound
    assert not shared(cache, FILES[2]).exists()
    assert cache.localize(FILES[:1]).fetched_files == 1  # evicted: fetched again when needed
    cache.close()
    other.close()


def test_least_recently_used_copies_go_first(source: LocalStorage, tmp_path: Path) -> None:
    cache = FileCache(source, tmp_path / "cache", max_bytes=size_of(source, FILES[0], FILES[2]))
    cache.localize(FILES[:1])
    cache.localize(FILES[1:2])
    cache.release(live=[])
    cache.localize([FILES[0], FILES[2]])  # f10 used again: f20 is the least recently used
    cache.release(live=[])
    assert cache.localize([FILES[0], FILES[2]]).fetched_files == 0
    assert cache.localize(FILES[1:2]).fetched_files == 1
    cache.close()


def test_a_slot_held_by_another_live_process_is_never_taken(
    source: LocalStorage, tmp_path: Path
) -> None:
    root = tmp_path / "cache"
    script = (
        "import time; from pathlib import Path; from api.warehouse.files import FileCache; "
        "from pipelines.catalog import LocalStorage; "
        f"c = FileCache(LocalStorage(Path({str(source.root)!r})), Path({str(root)!r})); "
        "c.localize(['t/f10.parquet']); print(c.directory.name, flush=True); time.sleep(60)"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    holder = subprocess.Popen(
        [sys.executable, "-c", script], stdout=subprocess.PIPE, text=True, cwd=ROOT, env=env
    )
    try:
        assert holder.stdout is not None
        assert holder.stdout.readline().strip() == "slot-0"
        mine = FileCache(source, root)
        assert mine.directory.name == "slot-1"
        assert (root / "slot-0" / FILES[0]).exists()  # the holder's link is left alone
        assert mine.localize(FILES[:1]).fetched_files == 0  # and its fetch serves this worker
        mine.close()
    finally:
        holder.kill()
        holder.communicate()
    restarted = FileCache(source, root)  # the slot is free again: emptied, the copies still there
    assert restarted.directory.name == "slot-0"
    assert not (root / "slot-0" / FILES[0]).exists()
    assert restarted.localize(FILES[:1]).fetched_files == 0
    restarted.close()


def test_a_fetch_cut_short_is_never_read_and_is_deleted_once_its_process_is_gone(
    source: LocalStorage, tmp_path: Path
) -> None:
    cache = FileCache(source, tmp_path / "cache")
    dead = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        capture_output=True,
        text=True,
        check=True,
    )
    partial = cache.objects / "t" / f"f10.parquet.{dead.stdout.strip()}.1.part"
    running = cache.objects / "t" / f"f20.parquet.{os.getpid()}.1.part"
    partial.parent.mkdir(parents=True)
    partial.write_bytes(b"PAR1 half of a file")
    running.write_bytes(b"PAR1 a fetch in progress")
    assert cache.localize(FILES[:1]).fetched_files == 1
    cache.release(live=FILES[:1])
    assert not partial.exists()
    assert running.exists()
    cache.close()


def test_a_manifest_path_outside_the_warehouse_is_refused(
    source: LocalStorage, tmp_path: Path
) -> None:
    cache = FileCache(source, tmp_path / "cache")
    with pytest.raises(ValueError, match="leaves the warehouse"):
        cache.localize(["../../warehouse/t/f10.parquet"])
    cache.close()


def test_a_temporary_cache_removes_its_directory_on_close(source: LocalStorage) -> None:
    cache = FileCache.temporary(source)
    cache.localize(FILES[:1])
    assert cache.root.exists()
    cache.close()
    assert not cache.root.exists()


def test_a_local_warehouse_is_read_in_place_and_each_footer_once(source: LocalStorage) -> None:
    files = InPlaceFiles(source)
    local = files.localize(FILES[:1])
    assert local.files[FILES[0]].path == str(source.root.resolve() / FILES[0])
    assert (local.fetched_files, local.fetched_bytes) == (0, 0)
    (source.root / FILES[0]).unlink()  # remembered: its footer is not read again
    assert files.localize(FILES[:1]).files[FILES[0]].rows == 10
    files.release(live=[])
    with pytest.raises(FileNotFoundError):
        files.localize(FILES[:1])


def test_a_version_that_fails_half_way_leaves_no_link_unreleased(
    source: LocalStorage, tmp_path: Path
) -> None:
    cache = FileCache(source, tmp_path / "cache")
    with pytest.raises(FileNotFoundError):
        cache.localize([FILES[0], "t/missing.parquet"])
    cache.release(live=[])
    assert not (cache.directory / FILES[0]).exists()
    cache.close()
