"""The DuckDB warehouse reader: in-memory views over exactly one manifest version's Parquet files."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import AsyncIterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import asynccontextmanager
from functools import partial
from pathlib import Path

import anyio
import anyio.to_thread
import duckdb
import polars as pl
import pyarrow as pa

from api.warehouse.reader import QueryParams, WarehouseUnavailable
from pipelines.catalog import TABLES, LocalStorage, Manifest, WarehouseStorage
from pipelines.catalog.sql import quote_identifier, view_sql
from pipelines.catalog.storage import read_files

logger = logging.getLogger(__name__)


class DuckDBSnapshot:
    """One manifest version: its own in-memory database, one view per table, a cursor per thread.

    A DuckDB connection is not thread-safe, so each thread that queries gets its own cursor on the
    snapshot's database. Nothing is shared with the next version: swapping snapshots never disturbs
    a request still reading this one, and the database goes away when the last reference does.
    """

    def __init__(self, manifest: Manifest, connection: duckdb.DuckDBPyConnection) -> None:
        self._manifest = manifest
        self._connection = connection
        self._local = threading.local()
        self._lock = threading.Lock()

    @classmethod
    def open(cls, warehouse: Path | WarehouseStorage, manifest: Manifest) -> DuckDBSnapshot:
        """Create one view or table per catalog table and check every file against the manifest.

        A local warehouse is viewed in place (`read_parquet` over the manifest's files); one on
        object storage is loaded: every file of the version is fetched once into arrow and copied
        into the snapshot's in-memory database, so requests never wait on the network.
        """
        storage = LocalStorage(warehouse) if isinstance(warehouse, Path) else warehouse
        connection = duckdb.connect(":memory:")
        try:
            if isinstance(storage, LocalStorage):
                for name in sorted(TABLES):
                    _create_view(connection, storage.root, manifest, name)
            else:
                _load_tables(connection, storage, manifest)
        except duckdb.Error as exc:
            connection.close()
            raise WarehouseUnavailable(f"manifest version {manifest.version}: {exc}") from exc
        except (OSError, pa.ArrowException) as exc:
            connection.close()
            raise WarehouseUnavailable(
                f"manifest version {manifest.version}: cannot read {storage.url}: {exc}"
            ) from exc
        return cls(manifest, connection)

    @property
    def manifest(self) -> Manifest:
        return self._manifest

    @property
    def version(self) -> int:
        return self._manifest.version

    def query(self, sql: str, params: QueryParams = None) -> pl.DataFrame:
        return self._cursor().sql(sql, params=params).pl()

    async def fetch(self, sql: str, params: QueryParams = None) -> pl.DataFrame:
        return await anyio.to_thread.run_sync(partial(self.query, sql, params))

    def verify(self) -> None:
        """Scan every table the manifest lists (file footers and row counts)."""
        try:
            for name in sorted(TABLES):
                _check_rows(self._cursor(), self._manifest, name)
        except duckdb.Error as exc:
            raise WarehouseUnavailable(f"manifest version {self.version}: {exc}") from exc

    def close(self) -> None:
        self._connection.close()

    def _cursor(self) -> duckdb.DuckDBPyConnection:
        cursor: duckdb.DuckDBPyConnection | None = getattr(self._local, "cursor", None)
        if cursor is None:
            with self._lock:
                cursor = self._connection.cursor()
            self._local.cursor = cursor
        return cursor


def _create_view(
    connection: duckdb.DuckDBPyConnection, warehouse_dir: Path, manifest: Manifest, name: str
) -> None:
    """The catalog's view of table `name` over the manifest's files (no file: no rows)."""
    files = [str((warehouse_dir / path).resolve()) for path in manifest.files(name)]
    connection.execute(view_sql(TABLES[name], files))
    if files:
        _check_rows(connection, manifest, name)


def _check_rows(connection: duckdb.DuckDBPyConnection, manifest: Manifest, name: str) -> None:
    # fetchall, not fetchone: DuckDB 2 refuses the next statement while a result is unfinished.
    [(found,)] = connection.execute(f"SELECT count(*) FROM {quote_identifier(name)}").fetchall()
    expected = sum(f.rows for f in manifest.tables.get(name, {}).values())
    if found != expected:
        raise duckdb.InvalidInputException(f"{name}: {found} rows, manifest says {expected}")


LOAD_THREADS = 8
"""Objects fetched at once while loading a version from object storage."""


def _load_tables(
    connection: duckdb.DuckDBPyConnection, storage: WarehouseStorage, manifest: Manifest
) -> None:
    # Every file of the catalog's tables in exactly this manifest, fetched in parallel (the
    # pipeline's internal state tables are never served, so never fetched); a file whose row count
    # differs from the manifest's refuses the whole version, as locally.
    entries = [
        (name, market, entry)
        for name, partitions in sorted(manifest.tables.items())
        if name in TABLES
        for market, entry in sorted(partitions.items())
    ]
    filesystem = storage.filesystem()  # one client for every object (it is thread-safe)
    with ThreadPoolExecutor(LOAD_THREADS) as pool:
        fetched = list(pool.map(lambda e: read_files(storage, [e[2].path], filesystem)[0], entries))  # fmt: skip
    by_table: dict[str, list[pa.Table]] = {}
    for (name, market, entry), table in zip(entries, fetched, strict=True):
        if table.num_rows != entry.rows:
            raise duckdb.InvalidInputException(
                f"{name}/{market}: {table.num_rows} rows, manifest says {entry.rows}"
            )
        by_table.setdefault(name, []).append(table)
    for name in sorted(TABLES):
        tables = by_table.get(name)
        source = (
            pa.concat_tables(tables, promote_options="permissive")
            if tables
            else TABLES[name].empty().to_arrow()
        )
        connection.register("_load", source)
        connection.execute(f"CREATE TABLE {quote_identifier(name)} AS SELECT * FROM _load")
        connection.unregister("_load")


class DuckDBWarehouseReader:
    """Watches the manifest and swaps immutable snapshots; requests never touch the filesystem.

    `current()` is a plain attribute read, safe on the event loop. `refresh()` (blocking) stats the
    manifest and, only when it changed, loads the new version into a fresh snapshot before swapping
    the reference, so a reader sees the old version or the new one and never a mix. A version whose
    files cannot be read is not swapped in: the previous one keeps serving and `failure` says why.
    """

    def __init__(
        self,
        warehouse: Path | WarehouseStorage,
        *,
        poll_interval: float = 1.0,
        retry_seconds: float = 30.0,
    ) -> None:
        self.storage: WarehouseStorage = (
            LocalStorage(warehouse) if isinstance(warehouse, Path) else warehouse
        )
        self.poll_interval = poll_interval
        self.retry_seconds = retry_seconds
        """A version that failed to load is tried again after this long (a network blip)."""
        self._snapshot: DuckDBSnapshot | None = None
        self._failure: str | None = None
        self._failed_at = 0.0
        self._seen: str | None = ""
        self._refresh_lock = threading.Lock()

    def current(self) -> DuckDBSnapshot | None:
        return self._snapshot

    @property
    def data_version(self) -> int | None:
        snapshot = self._snapshot
        return None if snapshot is None else snapshot.version

    @property
    def failure(self) -> str | None:
        """Why the newest manifest could not be loaded, or None when it is the one serving."""
        return self._failure

    def refresh(self) -> bool:
        with self._refresh_lock:
            seen = self.storage.manifest_tag()
            retry = self._failure is not None and time.monotonic() - self._failed_at >= self.retry_seconds  # fmt: skip
            if seen == self._seen and not retry:
                return False
            self._seen = seen
            try:
                return self._load()
            except Exception as exc:
                self._failure = str(exc)
                self._failed_at = time.monotonic()
                logger.warning("warehouse manifest not loaded: %s", exc)
                return False

    def probe(self) -> None:
        if self._failure is not None:
            raise WarehouseUnavailable(self._failure)
        snapshot = self._snapshot
        if snapshot is None:
            raise WarehouseUnavailable("the warehouse has not been materialized yet")
        snapshot.verify()

    @asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        await anyio.to_thread.run_sync(self.refresh)
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(self._watch)
            yield
            tasks.cancel_scope.cancel()
        self.close()

    def close(self) -> None:
        snapshot, self._snapshot = self._snapshot, None
        if snapshot is not None:
            snapshot.close()

    async def _watch(self) -> None:
        while True:
            await anyio.sleep(self.poll_interval)
            await anyio.to_thread.run_sync(self.refresh)

    def _load(self) -> bool:
        manifest = self.storage.read_manifest()
        current = self._snapshot
        self._failure = None
        if manifest is None:
            self._snapshot = None
            return current is not None
        if current is not None and current.version == manifest.version:
            return False
        started = time.perf_counter()
        self._snapshot = DuckDBSnapshot.open(self.storage, manifest)
        logger.info(
            "warehouse data version %s loaded from %s in %.2f s",
            manifest.version,
            self.storage.url,
            time.perf_counter() - started,
        )
        return True
