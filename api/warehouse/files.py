"""Where a snapshot's Parquet files are read from: in place (local warehouse) or a disk cache (S3).

The warehouse's files are immutable and uniquely named (a writer never overwrites one), so a file's
manifest path is a key that never goes stale: a version shares most of its files with the one
before, and a worker fetches and inspects each file once, whatever the number of versions. DuckDB
then reads the files where they lie (views), so a worker's memory does not grow with the warehouse.
"""

from __future__ import annotations

import fcntl
import hashlib
import logging
import os
import shutil
import tempfile
import threading
from collections.abc import Collection, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
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

    def trusted(self, rows: Mapping[str, int]) -> Localized:
        """Files whose row counts are already known (a past version's record: its files were
        checked when it was current), read where they are with no footer read."""
        return Localized({r: LocalFile(str(self._root / r), n) for r, n in rows.items()})

    def release(self, live: Collection[str]) -> None:
        live = set(live)
        for relative in [r for r in self._rows if r not in live]:
            del self._rows[relative]

    def close(self) -> None:
        self._rows.clear()


class FileCache:
    """The host's disk cache of an object-storage warehouse's files, shared by its worker processes.

    Layout under the cache directory:

        objects/<manifest path>     the shared copies: each object is fetched once per host
        locks/<hash>.lock           held (flock) by the process fetching that object
        slot-<n>.lock               held (flock) by one worker process for its life
        slot-<n>/<manifest path>    hard links to the objects that worker's live versions use

    A worker reads its own hard links, so no other process can take a file from under it: eviction
    removes only shared copies no slot links (link count 1), least recently used first, until the
    shared copies fit `max_bytes`; copies a live version uses are never evicted (if they alone
    exceed the bound, the cache holds them and says so). A worker that finds an object already
    fetched links it (no fetch); two workers needing the same new object wait on its lock, so one
    fetches it. A worker's slot keeps only what its live versions use; a restarted worker takes a
    free slot and relinks what the host still holds.
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
        self.root = directory
        self.objects = directory / "objects"
        self._locks = directory / "locks"
        self._temporary = temporary
        self._lock = threading.Lock()
        self._fetchers = ThreadPoolExecutor(FETCH_THREADS, thread_name_prefix="warehouse-fetch")
        self._slot_lock, self.directory = _claim_slot(directory)
        for path in (self.objects, self._locks):
            path.mkdir(parents=True, exist_ok=True)
        self._linked: set[str] = set()
        self._rows: dict[str, int] = {}

    @classmethod
    def temporary(
        cls, storage: WarehouseStorage, max_bytes: int = DEFAULT_CACHE_BYTES
    ) -> FileCache:
        """A cache in a new temporary directory, removed on `close` (a reader made without one)."""
        root = Path(tempfile.mkdtemp(prefix="mi-warehouse-cache-"))
        return cls(storage, root, max_bytes, temporary=True)

    @property
    def size(self) -> int:
        """Bytes of the shared copies on disk (a hard link takes no more)."""
        return sum(copy.size for copy in _copies(self.objects))

    def localize(self, relatives: Sequence[str]) -> Localized:
        with self._lock:
            missing = [r for r in dict.fromkeys(relatives) if r not in self._linked]
        fetched = [b for b in self._fetchers.map(self._link_or_fetch, missing) if b is not None]
        files = {r: LocalFile(str(self.directory / r), self._rows_of(r)) for r in relatives}
        return Localized(files, len(fetched), sum(fetched))

    def release(self, live: Collection[str]) -> None:
        live = set(live)
        with self._lock:
            for relative in self._linked - live:
                (self.directory / relative).unlink(missing_ok=True)
                self._rows.pop(relative, None)
            self._linked &= live
        self._evict()

    def close(self) -> None:
        self._fetchers.shutdown()
        self._slot_lock.close()  # releases the slot's flock
        if self._temporary:
            shutil.rmtree(self.root, ignore_errors=True)

    def _rows_of(self, relative: str) -> int:
        rows = self._rows.get(relative)
        if rows is None:  # linked from a copy another process fetched: its footer, read once
            rows = self._rows[relative] = pq.read_metadata(self.directory / relative).num_rows
        return rows

    def _link_or_fetch(self, relative: str) -> int | None:
        """Link the host's copy into this worker's slot, fetching it first if the host has none;
        the bytes fetched, or None when the copy was there."""
        shared, mine = _inside(self.objects, relative), _inside(self.directory, relative)
        mine.parent.mkdir(parents=True, exist_ok=True)
        size: int | None = None
        if not _link(shared, mine):
            with _held(self._locks / f"{hashlib.sha1(relative.encode()).hexdigest()}.lock"):
                if not _link(shared, mine):  # not fetched by another worker meanwhile
                    size = self._fetch(relative, shared)
                    if not _link(shared, mine):  # pragma: no cover - evicted within microseconds
                        raise FileNotFoundError(f"{shared} vanished right after its fetch")
        with self._lock:  # linked: released by `release` even if another file of the version fails
            self._linked.add(relative)
        return size

    def _fetch(self, relative: str, shared: Path) -> int:
        self._filesystem = self._filesystem or self._storage.filesystem()
        shared.parent.mkdir(parents=True, exist_ok=True)
        partial = shared.with_name(f"{shared.name}.{os.getpid()}.{threading.get_ident()}.part")
        try:
            size = _copy(self._filesystem, self._storage.arrow_path(relative), partial)
            # A truncated object fails here, not in a query; its rows are known from now on.
            self._rows[relative] = pq.read_metadata(partial).num_rows
            os.link(partial, shared)
        finally:
            partial.unlink(missing_ok=True)
        return size

    def _evict(self) -> None:
        copies = _copies(self.objects)
        total = sum(copy.size for copy in copies)
        for copy in sorted((c for c in copies if c.links == 1), key=lambda c: c.used):
            if total <= self.max_bytes:
                return
            copy.path.unlink(missing_ok=True)  # a worker linking it right now then fetches again
            total -= copy.size
        if total > self.max_bytes:
            logger.warning(
                "warehouse cache %s: the live versions' files take %d bytes, over its bound of %d",
                self.root,
                total,
                self.max_bytes,
            )


@dataclass(frozen=True, slots=True)
class _Copy:
    path: Path
    size: int
    links: int
    used: int
    """When a worker last linked it (its mtime, touched on every link)."""


def _copies(objects: Path) -> list[_Copy]:
    """The shared copies; a `.part` whose fetching process is gone is deleted on the way."""
    copies = []
    for path in objects.rglob("*"):
        if path.name.endswith(".part"):
            if not _alive(_fetcher_of(path)):
                path.unlink(missing_ok=True)
            continue
        try:
            stat = path.stat()
        except FileNotFoundError:  # evicted by another worker meanwhile
            continue
        if path.is_file():
            copies.append(_Copy(path, stat.st_size, stat.st_nlink, stat.st_mtime_ns))
    return copies


def _fetcher_of(partial: Path) -> int:
    """The pid in `<name>.<pid>.<thread>.part` (0, never alive, for any other name)."""
    parts = partial.name.rsplit(".", 3)
    return int(parts[1]) if len(parts) == 4 and parts[1].isdigit() else 0


def _alive(pid: int) -> bool:
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # pragma: no cover - another user's process: alive
        return True
    return True


def _link(shared: Path, mine: Path) -> bool:
    """Hard-link the host's copy into a slot; False when the host has no copy."""
    try:
        os.link(shared, mine)
    except FileNotFoundError:
        return False
    except FileExistsError:
        pass
    os.utime(mine)  # the shared inode's mtime: when it was last used
    return True


def _inside(directory: Path, relative: str) -> Path:
    path = directory / relative
    if not path.resolve().is_relative_to(directory.resolve()):
        raise ValueError(f"manifest path {relative!r} leaves the warehouse")
    return path


@contextmanager
def _held(lock_path: Path) -> Iterator[None]:
    """An exclusive flock on `lock_path` (blocking); the file is removed before it is released,
    so locks do not pile up (a process that opened the old file meanwhile may fetch the object
    twice, which is wasteful but safe: the shared copy is linked, never overwritten)."""
    with lock_path.open("ab") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            lock_path.unlink(missing_ok=True)


def _copy(filesystem: pafs.FileSystem, source: str, target: Path) -> int:
    size = 0
    with filesystem.open_input_stream(source) as stream, target.open("wb") as out:
        while chunk := stream.read(CHUNK_BYTES):
            size += out.write(chunk)
    return size


def _claim_slot(root: Path) -> tuple[IO[bytes], Path]:
    """The first slot under `root` no other live process holds, locked for this process's life,
    and emptied (a previous holder's links are nothing this process uses)."""
    root.mkdir(parents=True, exist_ok=True)
    for slot in range(MAX_SLOTS):
        lock = (root / f"slot-{slot}.lock").open("ab")
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            lock.close()
            continue
        directory = root / f"slot-{slot}"
        shutil.rmtree(directory, ignore_errors=True)
        directory.mkdir()
        return lock, directory
    raise RuntimeError(f"warehouse cache {root}: all {MAX_SLOTS} slots are held by live processes")
