"""Where a snapshot's Parquet files are read from: in place (local warehouse) or a disk cache (S3).

The warehouse's files are immutable and uniquely named (a writer never overwrites one), so a file's
manifest path is a key that never goes stale: a version shares most of its files with the one
before, and a worker fetches and inspects each file once, whatever the number of versions. DuckDB
then reads the files where they lie (views), so a worker's memory does not grow with the warehouse.
"""

from __future__ import annotations

import fcntl
import logging
import os
import shutil
import tempfile
import threading
import time
from collections.abc import Collection, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Protocol

import pyarrow.fs as pafs
import pyarrow.parquet as pq

from pipelines.catalog import LocalStorage, WarehouseStorage

logger = logging.getLogger(__name__)

FETCH_THREADS = 8
"""Objects fetched at once (the fetch waits on the network, not the CPU)."""
CHUNK_BYTES = 8 << 20
DEFAULT_CACHE_BYTES = 4 << 30
"""The disk cache's default bound (`MI_WAREHOUSE_CACHE_MB`): well above the embedded market's
warehouse; files a live version uses are never evicted, so the bound can be exceeded by them."""
MAX_SLOTS = 256
"""Most worker processes that can share one cache directory (each holds a slot of its own)."""


@dataclass(frozen=True, slots=True)
class LocalFile:
    """A warehouse file as DuckDB reads it: an absolute local path, and its rows (from its footer)."""

    path: str
    rows: int


@dataclass(frozen=True, slots=True)
class Localized:
    """The files of one version, by manifest path, and what it cost to get them."""

    files: Mapping[str, LocalFile]
    fetched_files: int = 0
    fetched_bytes: int = 0


class VersionFiles(Protocol):
    """Gives a version's files local paths; forgets what no live version uses."""

    def localize(self, relatives: Sequence[str]) -> Localized:
        """Every manifest path as a readable local file (fetched if needed, footer checked)."""
        ...

    def release(self, live: Collection[str]) -> None:
        """Only the files in `live` (used by a snapshot still alive) must stay readable."""
        ...

    def close(self) -> None: ...


class InPlaceFiles:
    """A local warehouse: files are read where they are; only each file's row count is remembered."""

    def __init__(self, storage: LocalStorage) -> None:
        self._root = storage.root.resolve()
        self._rows: dict[str, int] = {}

    def localize(self, relatives: Sequence[str]) -> Localized:
        files: dict[str, LocalFile] = {}
        for relative in relatives:
            path = str(self._root / relative)
            rows = self._rows.get(relative)
            if rows is None:
                rows = self._rows[relative] = pq.read_metadata(path).num_rows
            files[relative] = LocalFile(path, rows)
        return Localized(files)

    def release(self, live: Collection[str]) -> None:
        live = set(live)
        for relative in [r for r in self._rows if r not in live]:
            del self._rows[relative]

    def close(self) -> None:
        self._rows.clear()


@dataclass(slots=True)
class _Cached:
    path: Path
    size: int
    rows: int | None
    last_used: float


class FileCache:
    """A worker's disk cache of an object-storage warehouse's files, keyed by manifest path.

    Bounded by `max_bytes` on disk: after each version the least recently used files that no live
    version uses are evicted until the cache fits (files a live version uses are never evicted; if
    they alone exceed the bound, the cache holds them and says so). Several worker processes share
    one directory through slots: each process locks a slot of its own (`slot-<n>`, an `flock` held
    for its lifetime), so no worker evicts a file another is reading, and a restarted worker takes
    a free slot with its files still warm.
    """

    def __init__(
        self,
        storage: WarehouseStorage,
        directory: Path,
        max_bytes: int = DEFAULT_CACHE_BYTES,
        *,
        temporary: bool = False,
    ) -> None:
        self._storage = storage
        self._filesystem: pafs.FileSystem | None = None
        self.max_bytes = max_bytes
        self._lock = threading.Lock()
        self._root = directory
        self._temporary = temporary
        self._fetchers = ThreadPoolExecutor(FETCH_THREADS, thread_name_prefix="warehouse-fetch")
        self._slot_lock, self.directory = _claim_slot(directory)
        self._index = _scan(self.directory)

    @classmethod
    def temporary(
        cls, storage: WarehouseStorage, max_bytes: int = DEFAULT_CACHE_BYTES
    ) -> FileCache:
        """A cache in a new temporary directory, removed on `close` (a reader made without one)."""
        root = Path(tempfile.mkdtemp(prefix="mi-warehouse-cache-"))
        return cls(storage, root, max_bytes, temporary=True)

    @property
    def size(self) -> int:
        """Bytes on disk."""
        with self._lock:
            return sum(entry.size for entry in self._index.values())

    def localize(self, relatives: Sequence[str]) -> Localized:
        now = time.monotonic()
        with self._lock:
            missing = [r for r in dict.fromkeys(relatives) if r not in self._index]
            for relative in relatives:
                if relative in self._index:
                    self._index[relative].last_used = now
        if missing:
            filesystem = self._filesystem = self._filesystem or self._storage.filesystem()
            fetched = list(self._fetchers.map(lambda r: self._fetch(filesystem, r, now), missing))
            with self._lock:
                self._index.update(zip(missing, fetched, strict=True))
        files = {r: LocalFile(str(self._entry(r).path), self._rows(r)) for r in relatives}
        return Localized(files, len(missing), sum(self._entry(r).size for r in missing))

    def release(self, live: Collection[str]) -> None:
        live = set(live)
        with self._lock:
            total = sum(entry.size for entry in self._index.values())
            by_age = sorted(self._index.items(), key=lambda item: item[1].last_used)
            for relative, entry in by_age:
                if total <= self.max_bytes:
                    return
                if relative in live:
                    continue
                entry.path.unlink(missing_ok=True)
                del self._index[relative]
                total -= entry.size
        logger.warning(
            "warehouse cache %s: the live versions' files take %d bytes, over its bound of %d",
            self.directory,
            total,
            self.max_bytes,
        )

    def close(self) -> None:
        self._fetchers.shutdown()
        self._slot_lock.close()  # releases the slot's flock
        if self._temporary:
            shutil.rmtree(self._root, ignore_errors=True)

    def _entry(self, relative: str) -> _Cached:
        with self._lock:
            return self._index[relative]

    def _rows(self, relative: str) -> int:
        entry = self._entry(relative)
        if entry.rows is None:  # a file found on disk at start: its footer is read once, on use
            entry.rows = pq.read_metadata(entry.path).num_rows
        return entry.rows

    def _fetch(self, filesystem: pafs.FileSystem, relative: str, now: float) -> _Cached:
        target = self.directory / relative
        if not target.resolve().is_relative_to(self.directory.resolve()):
            raise ValueError(f"manifest path {relative!r} leaves the warehouse")
        target.parent.mkdir(parents=True, exist_ok=True)
        partial = target.with_name(f"{target.name}.part")
        size = _copy(filesystem, self._storage.arrow_path(relative), partial)
        rows = pq.read_metadata(partial).num_rows  # a truncated object fails here, not in a query
        os.replace(partial, target)
        return _Cached(target, size, rows, now)


def _copy(filesystem: pafs.FileSystem, source: str, target: Path) -> int:
    size = 0
    with filesystem.open_input_stream(source) as stream, target.open("wb") as out:
        while chunk := stream.read(CHUNK_BYTES):
            size += out.write(chunk)
    return size


def _claim_slot(root: Path) -> tuple[IO[bytes], Path]:
    """The first slot under `root` no other live process holds, locked for this process's life."""
    root.mkdir(parents=True, exist_ok=True)
    for slot in range(MAX_SLOTS):
        lock = (root / f"slot-{slot}.lock").open("ab")
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            lock.close()
            continue
        directory = root / f"slot-{slot}"
        directory.mkdir(exist_ok=True)
        return lock, directory
    raise RuntimeError(f"warehouse cache {root}: all {MAX_SLOTS} slots are held by live processes")


def _scan(directory: Path) -> dict[str, _Cached]:
    """The files a previous holder of the slot left; a `.part` (a fetch cut short) is deleted."""
    index: dict[str, _Cached] = {}
    for path in directory.rglob("*"):
        if not path.is_file():
            continue
        if path.name.endswith(".part"):
            path.unlink(missing_ok=True)
            continue
        index[path.relative_to(directory).as_posix()] = _Cached(
            path, path.stat().st_size, None, 0.0
        )
    return index
