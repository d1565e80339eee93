"""The warehouse on a local disk: immutable Parquet files, committed through the manifest under a lock."""

from __future__ import annotations

import fcntl
import os
import secrets
import shutil
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import polars as pl

from pipelines.catalog import (
    Manifest,
    PartitionFile,
    Table,
    read_manifest,
    write_manifest,
)
from pipelines.catalog.manifest import PARTITION_SEPARATOR, LoggedVersion, market_of
from pipelines.catalog.storage import LocalStorage, read_partitions
from pipelines.catalog.versions import (
    RECORD_SUFFIX,
    VERSIONS_DIR,
    Retention,
    record_files,
    record_of,
    record_path,
    retained_files,
)
from pipelines.warehouse import views
from pipelines.warehouse.commits import (
    WHOLE_TABLE,
    CommitConflictError,
    TableWrite,
    apply_writes,
    changes_nothing,
    conflicts,
    retired_paths,
    utc_now,
)
from pipelines.warehouse.staging import staged_paths

LOCK_NAME = ".lock"
STAGING_DIR = "_staging"
"""Runs' staging records: `_staging/<run id>/<step>@<attempt>.json`, naming files not committed
yet."""
DEFAULT_GC_GRACE = timedelta(minutes=10)
STAGING_TTL = timedelta(hours=6)
"""A staging record untouched for this long belongs to a run that died: its files may go."""

__all__ = ["WHOLE_TABLE", "Commit", "CommitConflictError", "Expiry", "Published", "Warehouse"]


@dataclass(frozen=True)
class Commit:
    """What one write landed: the new file, its rows, and the manifest version that names it."""

    table: str
    market: str
    path: Path
    rows: int
    version: int
    views_refreshed: bool


@dataclass(frozen=True)
class Expiry:
    """What an expiry did: the versions it kept and dropped, and the files it deleted."""

    kept: tuple[LoggedVersion, ...]
    expired: tuple[LoggedVersion, ...]
    removed: tuple[str, ...]
    """Files deleted (paths relative to the root): expired versions' past their grace, failed
    runs', dead runs' staging."""
    freed_bytes: int


@dataclass(frozen=True)
class Published:
    """What a commit of several writes landed: the new manifest."""

    manifest: Manifest
    views_refreshed: bool
    published: bool = True
    """False when the writes changed nothing: `manifest` is the current one, its version stands."""

    @property
    def version(self) -> int:
        return self.manifest.version


@dataclass(frozen=True)
class Warehouse:
    """One warehouse directory; `duckdb_path` (optional) gets its views refreshed on every commit."""

    root: Path
    duckdb_path: Path | None = None
    gc_grace: timedelta = DEFAULT_GC_GRACE
    views_timeout: float = 10.0
    clock: Callable[[], datetime] = utc_now
    """When a commit publishes and what "now" an expiry keeps versions by (tests move it)."""

    @property
    def storage(self) -> LocalStorage:
        return LocalStorage(self.root)

    def write(self, table: Table, market: str, frame: pl.DataFrame) -> Commit:
        """Write `frame` as this market's only file of `table`, then make it current at once."""
        entry = self.write_file(table, market, frame)
        published = self.commit([TableWrite(table.name, market, {market: entry})])
        return Commit(
            table=table.name,
            market=market,
            path=self.root / entry.path,
            rows=entry.rows,
            version=published.version,
            views_refreshed=published.views_refreshed,
        )

    def write_file(self, table: Table, partition: str, frame: pl.DataFrame) -> PartitionFile:
        """Write `frame` (conformed to the catalog) as a new immutable file of `partition`; the
        manifest does not name it until a commit does."""
        check_partition(table, partition, frame)
        conformed = table.conform(frame)
        relative = self._write_file(table, partition, conformed)
        now = datetime.now(UTC).isoformat(timespec="milliseconds")
        return PartitionFile(path=relative, rows=conformed.height, written_at=now)

    def commit(self, writes: Sequence[TableWrite], run_id: str | None = None) -> Published:
        """Apply every write to the manifest in one replacement, or none of them, and log the new
        version (its record first: every version a reader can see has one).

        CommitConflictError when a write's base no longer matches the manifest (another run
        changed those partitions since this one read them).
        """
        with self._locked():
            old = read_manifest(self.root)
            stale = conflicts(old, writes)
            if stale:
                raise CommitConflictError(
                    f"changed by another run since this one read them: {', '.join(stale)}"
                )
            if old is not None and changes_nothing(old, writes):
                # A run that found nothing new: the version, and every ETag made from it, stays.
                return Published(old, self._views_at(old), published=False)
            now = self.clock()
            manifest = apply_writes(old, writes, now)
            if self.duckdb_path is not None and not self.duckdb_path.exists():
                # The first commit: the database file exists (with the views of what was there
                # before) before the manifest names a version, so every version a reader can see
                # has a file to open, even when this process dies right after the manifest.
                views.create_views_file(self.duckdb_path, self.root, old)
            self._put_atomically(
                record_path(manifest.version), record_of(old, manifest, run_id).to_bytes()
            )
            write_manifest(self.root, manifest)
            for path in retired_paths(old, manifest):
                _touch(self.root / path, now.timestamp())
            refreshed = self._refresh_views(manifest)
        return Published(manifest=manifest, views_refreshed=refreshed)

    def expire(self, retention: Retention, now: float | None = None) -> Expiry:
        """Drop the versions `retention` no longer keeps from the log (the data version stands),
        then delete what no retained version, live run or grace still needs."""
        now = self.clock().timestamp() if now is None else now
        with self._locked():
            manifest = read_manifest(self.root)
            if manifest is None:
                return Expiry(kept=(), expired=(), removed=(), freed_bytes=0)
            kept = retention.kept(manifest.log, datetime.fromtimestamp(now, UTC))
            expired = tuple(v for v in manifest.log if v not in kept)
            if expired:
                manifest = replace(manifest, log=kept)
                write_manifest(self.root, manifest)
            referenced = retained_files(self.storage, manifest)
            for entry in expired:  # their grace starts now: a reader may still hold them
                _touch(self.root / record_path(entry.version), now)
                for path in record_files(self.storage, entry.version) - referenced:
                    _touch(self.root / path, now)
            removed, freed = self._collect(referenced, now)
        return Expiry(kept, expired, removed, freed)

    def read(self, table: Table, markets: Sequence[str] | None = None) -> pl.DataFrame:
        """The current rows of `markets` (every partition when None), as one frame in catalog schema."""
        return read_partitions(self.storage, table, markets)

    def manifest(self) -> Manifest | None:
        return read_manifest(self.root)

    def ensure_views(self) -> None:
        """Bring the DuckDB views up to the current manifest (empty typed views before any write).

        Normally every commit refreshes them; this repairs a refresh skipped while the file was
        locked, a database file deleted, or a warehouse moved.
        """
        if self.duckdb_path is None or not self._views_behind(read_manifest(self.root)):
            return
        with self._locked():
            current = read_manifest(self.root)
            views.refresh_views(self.duckdb_path, self.root, current, timeout=self.views_timeout)

    def _collect(self, referenced: set[str], now: float) -> tuple[tuple[str, ...], int]:
        """Delete data files and version records that neither `referenced` nor a live run's
        staging names, once untouched for longer than the grace (a retired file is touched when
        it stops being current, an expired version's when it expires); drop dead runs' staging."""
        keep = referenced | self._drop_dead_staging(now)
        cutoff = now - self.gc_grace.total_seconds()
        removed, freed = [], 0
        candidates = [*self.root.glob("*/market=*/*"), *self.root.glob(f"{VERSIONS_DIR}/*")]
        for path in candidates:
            relative = str(path.relative_to(self.root))
            if relative in keep or not path.name.endswith((".parquet", ".tmp", RECORD_SUFFIX)):
                continue
            size = _unlink_if_older(path, cutoff)
            if size is not None:
                removed.append(relative)
                freed += size
        return tuple(sorted(removed)), freed

    def _put_atomically(self, relative: str, body: bytes) -> None:
        target = self.root / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        temporary = target.with_name(f".{target.name}.{os.getpid()}.tmp")
        temporary.write_bytes(body)
        os.replace(temporary, target)

    # Staging: records of files a run wrote but has not committed yet (pipelines.warehouse.staging).

    def put_staging(self, run_id: str, name: str, body: bytes) -> None:
        """Store (or replace) one staging record of a run, atomically."""
        folder = self.root / STAGING_DIR / _safe(run_id)
        folder.mkdir(parents=True, exist_ok=True)
        target = folder / f"{_safe(name)}.json"
        temporary = folder / f".{target.name}.{os.getpid()}.tmp"
        temporary.write_bytes(body)
        os.replace(temporary, target)

    def staging_records(
        self, run_id: str, where: Callable[[str], bool] = lambda _: True
    ) -> list[bytes]:
        """The staging records of a run whose step names pass `where`, in name order."""
        folder = self.root / STAGING_DIR / _safe(run_id)
        return [path.read_bytes() for path in sorted(folder.glob("*.json")) if where(path.stem)]

    def drop_staging(self, run_id: str) -> None:
        shutil.rmtree(self.root / STAGING_DIR / _safe(run_id), ignore_errors=True)

    def _drop_dead_staging(self, now: float) -> set[str]:
        """Paths named by live runs' staging records; records of dead runs are deleted."""
        live: set[str] = set()
        for folder in (self.root / STAGING_DIR).glob("*"):
            records = sorted(folder.glob("*.json"))
            newest = max((r.stat().st_mtime for r in records), default=0.0)
            if now - newest > STAGING_TTL.total_seconds():
                shutil.rmtree(folder, ignore_errors=True)
                continue
            for record in records:
                with suppress(FileNotFoundError):
                    live |= staged_paths(record.read_bytes())
        return live

    def _write_file(self, table: Table, partition: str, frame: pl.DataFrame) -> str:
        # A new, uniquely named file per write: a reader holding the previous file keeps reading it.
        market, _, rest = partition.partition(PARTITION_SEPARATOR)
        directory = self.root / table.name / f"market={market}"
        directory.mkdir(parents=True, exist_ok=True)
        prefix = rest.replace(PARTITION_SEPARATOR, ".") + "." if rest else ""
        name = f"{prefix}{time.time_ns()}-{secrets.token_hex(4)}.parquet"
        temporary = directory / f".{name}.tmp"
        write_parquet(frame, temporary, table.compressed)
        _fsync(temporary)
        os.replace(temporary, directory / name)
        return f"{table.name}/market={market}/{name}"

    def _views_behind(self, manifest: Manifest | None) -> bool:
        """Whether the DuckDB views are not built from `manifest` of this root (ViewsLockedError
        while another process holds the file)."""
        if self.duckdb_path is None:
            return False
        wanted = (manifest.version if manifest else 0, str(self.root.resolve()))
        return views.views_version(self.duckdb_path, timeout=self.views_timeout) != wanted

    def _views_at(self, manifest: Manifest) -> bool:
        """Whether the DuckDB views are built from `manifest`, refreshed first if they are not (a
        refresh skipped while the file was locked)."""
        try:
            behind = self._views_behind(manifest)
        except views.ViewsLockedError:
            return False
        return not behind or self._refresh_views(manifest)

    def _refresh_views(self, manifest: Manifest) -> bool:
        if self.duckdb_path is None:
            return True
        try:
            views.refresh_views(self.duckdb_path, self.root, manifest, timeout=self.views_timeout)
        except views.ViewsLockedError:
            return False
        return True

    @contextmanager
    def _locked(self) -> Iterator[None]:
        # flock is per open file description: it excludes other processes and other threads alike.
        self.root.mkdir(parents=True, exist_ok=True)
        with open(self.root / LOCK_NAME, "a") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)


def write_parquet(frame: pl.DataFrame, target: Any, compressed: bool = True) -> None:
    """A warehouse file: zstd at its fastest level, or uncompressed for a table that is not
    (`Table.compressed`). Against zstd's default level the fastest writes and reads a shard in
    about half the time, for a few percent more bytes."""
    if not compressed:
        frame.write_parquet(target, compression="uncompressed")
        return
    frame.write_parquet(target, compression="zstd", compression_level=1)


def check_partition(table: Table, partition: str, frame: pl.DataFrame) -> None:
    """Refuse a partition name that is not a path-safe key, and rows of another market."""
    parts = partition.split(PARTITION_SEPARATOR)
    if not partition or any(not p or p.startswith(".") or "=" in p for p in parts):
        raise ValueError(f"{table.name}: {partition!r} is not a usable partition name")
    market = market_of(partition)
    if market == WHOLE_TABLE or "market" not in frame.columns:
        return
    strays = frame.filter(pl.col("market") != market)["market"].unique().to_list()
    if strays:
        raise ValueError(f"{table.name}: partition {partition!r} holds rows of markets {strays}")


def _safe(name: str) -> str:
    # Brackets stay: a mapped step's record is known by its name (`staging.is_mapped`); so does
    # the `@` before an attempt's id (`staging.record_name`).
    return "".join(c if c.isalnum() or c in "-_.[]@" else "_" for c in name)


def _touch(path: Path, at: float | None = None) -> None:
    # The GC grace counts from the moment a file stops being needed, not from when it was written.
    with suppress(FileNotFoundError):
        os.utime(path, None if at is None else (at, at))


def _unlink_if_older(path: Path, cutoff: float) -> int | None:
    """The bytes freed by deleting `path` if untouched since before `cutoff`, else None."""
    try:
        stat = path.stat()
        if stat.st_mtime > cutoff:
            return None
        path.unlink()
    except FileNotFoundError:
        return None
    return stat.st_size


def _fsync(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
