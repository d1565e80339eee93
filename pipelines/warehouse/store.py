"""The warehouse writer and reader: immutable Parquet files committed through the manifest under a lock."""

from __future__ import annotations

import fcntl
import os
import secrets
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import polars as pl

from pipelines.catalog import (
    Manifest,
    PartitionFile,
    Table,
    read_manifest,
    write_manifest,
)
from pipelines.catalog.storage import LocalStorage, read_partitions
from pipelines.warehouse import views

WHOLE_TABLE = "all"
"""Partition name of a table written by an unpartitioned asset: the file holds every market."""

LOCK_NAME = ".lock"
DEFAULT_GC_GRACE = timedelta(minutes=10)


@dataclass(frozen=True)
class Commit:
    """What one write landed: the new file, its rows, and the manifest version that names it."""

    table: str
    market: str
    path: Path
    rows: int
    version: int
    views_refreshed: bool
    removed: tuple[Path, ...]
    """Files garbage-collected by this commit."""


@dataclass(frozen=True)
class Warehouse:
    """One warehouse directory; `duckdb_path` (optional) gets its views refreshed on every commit."""

    root: Path
    duckdb_path: Path | None = None
    gc_grace: timedelta = DEFAULT_GC_GRACE
    views_timeout: float = 10.0

    def write(self, table: Table, market: str, frame: pl.DataFrame) -> Commit:
        """Write `frame` as this partition's new file, then make it current in the manifest."""
        check_partition(table, market, frame)
        conformed = table.conform(frame)
        relative = self._write_file(table.name, market, conformed)
        with self._locked():
            manifest = self._commit(table.name, market, relative, conformed.height)
            refreshed = self._refresh_views(manifest)
            removed = self.collect_garbage(manifest)
        return Commit(
            table=table.name,
            market=market,
            path=self.root / relative,
            rows=conformed.height,
            version=manifest.version,
            views_refreshed=refreshed,
            removed=tuple(removed),
        )

    def read(self, table: Table, markets: Sequence[str] | None = None) -> pl.DataFrame:
        """The current rows of `markets` (every partition when None), as one frame in catalog schema."""
        return read_partitions(LocalStorage(self.root), table, markets)

    def manifest(self) -> Manifest | None:
        return read_manifest(self.root)

    def ensure_views(self) -> None:
        """Bring the DuckDB views up to the current manifest (empty typed views before any write).

        Normally every commit refreshes them; this repairs a refresh skipped while the file was
        locked, a database file deleted, or a warehouse moved.
        """
        if self.duckdb_path is None:
            return
        manifest = read_manifest(self.root)
        wanted = (manifest.version if manifest else 0, str(self.root.resolve()))
        if views.views_version(self.duckdb_path, timeout=self.views_timeout) == wanted:
            return
        with self._locked():
            current = read_manifest(self.root)
            views.refresh_views(self.duckdb_path, self.root, current, timeout=self.views_timeout)

    def collect_garbage(self, manifest: Manifest, now: float | None = None) -> list[Path]:
        """Delete data files the manifest no longer names, once retired for longer than the grace."""
        referenced = {
            self.root / f.path for parts in manifest.tables.values() for f in parts.values()
        }
        cutoff = (time.time() if now is None else now) - self.gc_grace.total_seconds()
        removed = []
        for path in self.root.glob("*/market=*/*"):
            if path in referenced or not path.name.endswith((".parquet", ".tmp")):
                continue
            if _unlink_if_older(path, cutoff):
                removed.append(path)
        return removed

    def _write_file(self, table: str, market: str, frame: pl.DataFrame) -> str:
        # A new, uniquely named file per write: a reader holding the previous file keeps reading it.
        directory = self.root / table / f"market={market}"
        directory.mkdir(parents=True, exist_ok=True)
        name = f"{time.time_ns()}-{secrets.token_hex(4)}.parquet"
        temporary = directory / f".{name}.tmp"
        frame.write_parquet(temporary)
        _fsync(temporary)
        os.replace(temporary, directory / name)
        return f"{table}/market={market}/{name}"

    def _commit(self, table: str, market: str, relative: str, rows: int) -> Manifest:
        old = read_manifest(self.root) or Manifest(version=0, updated_at="", tables={})
        partitions = replace_partition(table, old.tables.get(table, {}), market)
        for retired in set(old.tables.get(table, {})) - set(partitions):
            _touch(self.root / old.tables[table][retired].path)
        if market in partitions:
            _touch(self.root / partitions[market].path)
        now = datetime.now(UTC).isoformat(timespec="milliseconds")
        partitions[market] = PartitionFile(path=relative, rows=rows, written_at=now)
        manifest = Manifest(
            version=max(old.version + 1, time.time_ns()),
            updated_at=now,
            tables={**old.tables, table: dict(sorted(partitions.items()))},
        )
        write_manifest(self.root, manifest)
        return manifest

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


def check_partition(table: Table, market: str, frame: pl.DataFrame) -> None:
    if not market or "/" in market or market.startswith("."):
        raise ValueError(f"{table.name}: {market!r} is not a usable partition name")
    if market == WHOLE_TABLE or "market" not in frame.columns:
        return
    strays = frame.filter(pl.col("market") != market)["market"].unique().to_list()
    if strays:
        raise ValueError(f"{table.name}: partition {market!r} holds rows of markets {strays}")


def replace_partition(
    table: str, partitions: dict[str, PartitionFile], market: str
) -> dict[str, PartitionFile]:
    # A whole-table write replaces every partition; a market write into a whole table would
    # silently shadow the other markets' rows, so it is refused.
    if market == WHOLE_TABLE:
        return {k: v for k, v in partitions.items() if k == WHOLE_TABLE}
    if WHOLE_TABLE in partitions:
        raise ValueError(
            f"{table}: stored whole (partition {WHOLE_TABLE!r}); a market partition cannot join it"
        )
    return dict(partitions)


def _touch(path: Path) -> None:
    # The GC grace counts from the moment a file stops being current, not from when it was written.
    with suppress(FileNotFoundError):
        os.utime(path)


def _unlink_if_older(path: Path, cutoff: float) -> bool:
    try:
        if path.stat().st_mtime >= cutoff:
            return False
        path.unlink()
    except FileNotFoundError:
        return False
    return True


def _fsync(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
