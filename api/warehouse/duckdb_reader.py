"""The DuckDB warehouse reader: views over exactly one manifest version's Parquet files, swapped whole."""

from __future__ import annotations

import itertools
import logging
import os
import threading
import time
import weakref
from collections import OrderedDict
from collections.abc import AsyncIterator, Callable, Iterable, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

import anyio
import anyio.to_thread
import duckdb
import polars as pl
import pyarrow as pa

from api.warehouse.files import FileCache, InPlaceFiles, LocalFile, Localized, VersionFiles
from api.warehouse.reader import QueryParams, WarehouseUnavailable
from pipelines.catalog import TABLES, LocalStorage, Manifest, WarehouseStorage
from pipelines.catalog.sql import quote_identifier, quote_literal, view_sql
from pipelines.catalog.versions import read_record, rfc3339

logger = logging.getLogger(__name__)


class VersionDatabase:
    """One in-memory DuckDB database for every snapshot of a reader: a schema per version.

    A version's schema has one view per catalog table, over a file-set view (`main."<table>#<n>"`,
    `read_parquet` of exactly that table's files) that every version with the same files shares,
    so a new version creates file-set views only for the tables whose files changed. One database,
    not one per version: opening a DuckDB database holds the GIL in many short bursts, which
    stalled every request on a worker's event loop at each swap. A retired version's schema is dropped by the
    next version's creation, in the reader's thread, never on the event loop.
    """

    def __init__(self) -> None:
        self.connection = duckdb.connect(":memory:")
        self._lock = threading.Lock()
        self._filesets: dict[tuple[str, tuple[str, ...]], _FileSet] = {}
        """(table, files) -> its view and the schemas using it."""
        self._schemas: dict[str, list[tuple[str, tuple[str, ...]]]] = {}
        self._pending: dict[str, dict[str, tuple[str, ...]]] = {}
        """schema -> the tables whose views are not created yet (a lazy version's), and their files."""
        self._retired: list[str] = []
        self._next = itertools.count()

    def create(
        self, manifest: Manifest, files: Mapping[str, LocalFile], *, lazy: bool = False
    ) -> str:
        """The schema of a new version (its row counts checked against the manifest first).

        `lazy` (a past version, `as_of`): each table's view is created when a query first names
        the table (`ensure`), not up front: binding a view reads its files' metadata, and a past
        version is asked for one route's tables, not all of them.
        """
        paths = {name: tuple(_checked_paths(manifest, name, files)) for name in sorted(TABLES)}
        with self._lock:
            self._drop_retired()
            schema = f"v{next(self._next)}"
            self.connection.execute(f"CREATE SCHEMA {schema}")
            self._schemas[schema] = []
            self._pending[schema] = paths
            if not lazy:
                try:
                    self._ensure(schema, list(paths))
                except duckdb.Error:
                    self._drop(schema)
                    raise
        return schema

    def ensure(self, schema: str, sql: str) -> None:
        """Create the views of `schema`'s tables that `sql` names and that are not made yet."""
        pending = self._pending.get(schema)
        if not pending:
            return
        named = [name for name in pending if name in sql]
        if named:
            with self._lock:
                self._ensure(schema, named)

    def _ensure(self, schema: str, names: Iterable[str]) -> None:
        # A failure leaves the table pending: the next query naming it tries again.
        pending = self._pending.get(schema, {})
        for name in [n for n in names if n in pending]:
            view = self._fileset(schema, name, pending[name])
            self.connection.execute(
                f"CREATE VIEW {schema}.{quote_identifier(name)} AS "
                f"SELECT * FROM main.{quote_identifier(view)}"
            )
            del pending[name]

    def retire(self, schema: str) -> None:
        """No snapshot reads `schema` any more (called from a finalizer: no DuckDB work here)."""
        self._retired.append(schema)

    def cursor(self, schema: str) -> duckdb.DuckDBPyConnection:
        """A connection of this thread's own to the database, reading `schema`'s tables."""
        with self._lock:
            cursor = self.connection.cursor()
        cursor.execute(f"SET search_path = {quote_literal(schema)}")
        return cursor

    def close(self) -> None:
        self.connection.close()

    def _fileset(self, schema: str, name: str, files: tuple[str, ...]) -> str:
        key = (name, files)
        entry = self._filesets.get(key)
        if entry is None:
            view = f"{name}#{next(self._next)}"
            qualified = f"main.{quote_identifier(view)}"
            self.connection.execute(view_sql(TABLES[name], files, qualified))
            entry = self._filesets[key] = _FileSet(view)
        entry.users.add(schema)
        self._schemas[schema].append(key)
        return entry.view

    def _drop_retired(self) -> None:
        while self._retired:
            self._drop(self._retired.pop())

    def _drop(self, schema: str) -> None:
        self._pending.pop(schema, None)
        self.connection.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")
        for key in self._schemas.pop(schema, []):
            entry = self._filesets.get(key)
            if entry is None:  # listed twice (a lazy view created on a retry): dropped already
                continue
            entry.users.discard(schema)
            if not entry.users:
                self.connection.execute(f"DROP VIEW IF EXISTS main.{quote_identifier(entry.view)}")
                del self._filesets[key]


@dataclass
class _FileSet:
    view: str
    users: set[str] = field(default_factory=set)


STREAM_BUFFER_BYTES = 1 << 20
"""What DuckDB queues ahead of a paused stream (a bulk export whose client reads slowly): its
default, ten times this, was most of what a stalled export held in the worker."""


class DuckDBSnapshot:
    """One manifest version: a schema of the reader's database, one view per table, a cursor per
    thread.

    A DuckDB connection is not thread-safe, so each thread that queries gets its own cursor,
    reading the snapshot's schema. Swapping snapshots never disturbs a request still reading this
    one: its schema is dropped only once the snapshot is gone (garbage), by a later swap.
    """

    def __init__(
        self, manifest: Manifest, database: VersionDatabase, schema: str, lazy: bool = False
    ) -> None:
        self._manifest = manifest
        self._database = database
        self._schema = schema
        self._lazy = lazy
        self._local = threading.local()
        self._retire = weakref.finalize(self, database.retire, schema)

    @classmethod
    def open(
        cls,
        manifest: Manifest,
        files: Mapping[str, LocalFile],
        database: VersionDatabase | None = None,
        *,
        lazy: bool = False,
    ) -> DuckDBSnapshot:
        """One view per catalog table over the version's local files (`files`, by manifest path),
        in `database` (default: a database of its own).

        Nothing is copied: DuckDB reads the Parquet files where they lie at each query. Every
        file's row count (from its footer, read once per file by `VersionFiles`) must be the
        manifest's, or the version is refused.
        """
        database = database or VersionDatabase()
        try:
            schema = database.create(manifest, files, lazy=lazy)
        except duckdb.Error as exc:
            raise WarehouseUnavailable(f"manifest version {manifest.version}: {exc}") from exc
        return cls(manifest, database, schema, lazy)

    @classmethod
    def in_place(cls, warehouse_dir: Path, manifest: Manifest) -> DuckDBSnapshot:
        """The snapshot of a local warehouse's `manifest` (for tools and tests)."""
        files = InPlaceFiles(LocalStorage(warehouse_dir)).localize(served_files(manifest))
        return cls.open(manifest, files.files)

    @property
    def manifest(self) -> Manifest:
        return self._manifest

    @property
    def version(self) -> int:
        return self._manifest.version

    @property
    def published(self) -> str:
        return rfc3339(self._manifest.updated_at)

    def query(self, sql: str, params: QueryParams = None) -> pl.DataFrame:
        self._ensure(sql)
        return self._cursor().sql(sql, params=params).pl()

    async def fetch(self, sql: str, params: QueryParams = None) -> pl.DataFrame:
        return await anyio.to_thread.run_sync(partial(self.query, sql, params))

    def record_batches(
        self,
        sql: str,
        params: QueryParams = None,
        *,
        batch_rows: int = 100_000,
        buffer_bytes: int = STREAM_BUFFER_BYTES,
    ) -> pa.RecordBatchReader:
        # A cursor of its own, not the thread's: a paused stream must survive other queries. The
        # caller holds the snapshot while it reads, so its schema is not dropped under the stream.
        self._ensure(sql)
        cursor = self._database.cursor(self._schema)
        cursor.execute(f"SET streaming_buffer_size = '{int(buffer_bytes) >> 10}KiB'")  # this cursor
        return cursor.sql(sql, params=params).to_arrow_reader(batch_rows)

    def verify(self) -> None:
        """Scan every table the manifest lists (file footers and row counts)."""
        try:
            self._ensure(" ".join(TABLES))
            for name in sorted(TABLES):
                _check_rows(self._cursor(), self._manifest, name)
        except duckdb.Error as exc:
            raise WarehouseUnavailable(f"manifest version {self.version}: {exc}") from exc

    def close(self) -> None:
        """Retire the snapshot's schema now (it is dropped by the database's next version)."""
        self._retire()

    def _ensure(self, sql: str) -> None:
        if self._lazy:
            try:
                self._database.ensure(self._schema, sql)
            except duckdb.Error as exc:
                raise WarehouseUnavailable(f"data version {self.version}: {exc}") from exc

    def _cursor(self) -> duckdb.DuckDBPyConnection:
        cursor: duckdb.DuckDBPyConnection | None = getattr(self._local, "cursor", None)
        if cursor is None:
            cursor = self._local.cursor = self._database.cursor(self._schema)
        return cursor


def _size(path: str) -> int:
    try:
        return os.path.getsize(path)
    except OSError:
        return 0


def served_files(manifest: Manifest) -> list[str]:
    """The files of the catalog's tables in `manifest` (the pipeline's internal state tables are
    never served, so never fetched)."""
    return [path for name in sorted(TABLES) for path in manifest.files(name)]


def _checked_paths(manifest: Manifest, name: str, files: Mapping[str, LocalFile]) -> list[str]:
    paths = []
    for key, entry in sorted(manifest.tables.get(name, {}).items()):
        local = files[entry.path]
        if local.rows != entry.rows:
            raise duckdb.InvalidInputException(
                f"{name}/{key}: {local.rows} rows, manifest says {entry.rows}"
            )
        paths.append(local.path)
    return paths


def _check_rows(connection: duckdb.DuckDBPyConnection, manifest: Manifest, name: str) -> None:
    # fetchall, not fetchone: DuckDB 2 refuses the next statement while a result is unfinished.
    [(found,)] = connection.execute(f"SELECT count(*) FROM {quote_identifier(name)}").fetchall()
    expected = sum(f.rows for f in manifest.tables.get(name, {}).values())
    if found != expected:
        raise duckdb.InvalidInputException(f"{name}: {found} rows, manifest says {expected}")


@dataclass(frozen=True, slots=True)
class VersionLoad:
    """What switching to a version cost this worker: from reading its manifest to serving it (the
    cache's eviction afterwards not included)."""

    version: int
    seconds: float
    fetched_files: int
    fetched_bytes: int


PAST_VERSIONS = 4
"""Past versions (`as_of`) a worker keeps open at once, least recently used closed first."""
PAST_VERSION_BYTES = 2 << 30
"""Bytes of Parquet the open past versions may name together (one version always stays open)."""


@dataclass(frozen=True, slots=True)
class _Past:
    snapshot: DuckDBSnapshot
    bytes: int


class DuckDBWarehouseReader:
    """Watches the manifest and swaps immutable snapshots; requests never touch the manifest.

    `current()` is a plain attribute read, safe on the event loop. `refresh()` (blocking, run in a
    worker thread by `running`) stats the manifest and, only when it changed, prepares the new
    version's snapshot (its files localized: read in place, or fetched once into the disk cache)
    before swapping the reference in one step, so a reader sees the old version or the new one and
    never a mix, and requests never wait for a swap. A version whose files cannot be read is not
    swapped in: the previous one keeps serving and `failure` says why.
    """

    def __init__(
        self,
        warehouse: Path | WarehouseStorage,
        *,
        poll_interval: float = 1.0,
        retry_seconds: float = 30.0,
        files: VersionFiles | None = None,
        prepare: Callable[[DuckDBSnapshot], None] | None = None,
        past_versions: int = PAST_VERSIONS,
        past_version_bytes: int = PAST_VERSION_BYTES,
    ) -> None:
        """`files`: where an object-storage warehouse's files are cached (default: a temporary
        directory of its own, removed on `close`); a local warehouse is always read in place.
        `prepare`: run on each new snapshot in the reader's thread before it is swapped in (what
        the app's requests would otherwise compute first, e.g. indexes), so requests find it."""
        self.storage: WarehouseStorage = (
            LocalStorage(warehouse) if isinstance(warehouse, Path) else warehouse
        )
        self.files: VersionFiles = files or (
            InPlaceFiles(self.storage)
            if isinstance(self.storage, LocalStorage)
            else FileCache.temporary(self.storage)
        )
        self.prepare = prepare
        self.poll_interval = poll_interval
        self.retry_seconds = retry_seconds
        """A version that failed to load is tried again after this long (a network blip)."""
        self.last_load: VersionLoad | None = None
        self._database = VersionDatabase()
        self._snapshot: DuckDBSnapshot | None = None
        self._live: weakref.WeakSet[DuckDBSnapshot] = weakref.WeakSet()
        """Every snapshot a request may still hold: their files must stay readable."""
        self._failure: str | None = None
        self._verified: tuple[int, str | None] | None = None
        """(version, why its files cannot be read or None): checked once, when it loads."""
        self._failed_at = 0.0
        self._seen: str | None = ""
        self._refresh_lock = threading.Lock()
        self._past: OrderedDict[int, _Past] = OrderedDict()
        self._past_lock = threading.Lock()
        self._past_limits = (past_versions, past_version_bytes)
        self._changes: dict[int, dict[str, list[str]]] = {}

    def current(self) -> DuckDBSnapshot | None:
        return self._snapshot

    def past(self, version: int) -> DuckDBSnapshot | None:
        """A past version already open (no I/O: safe on the event loop), else None."""
        with self._past_lock:
            held = self._past.get(version)
            if held is not None:
                self._past.move_to_end(version)
        return None if held is None else held.snapshot

    def open_past(self, version: int) -> DuckDBSnapshot:
        """Open a retained past version from its record (blocking: run it in a worker thread);
        the least recently used past versions beyond the bounds are closed."""
        found = self.past(version)
        if found is not None:
            return found
        record = read_record(self.storage, version)
        if record is None:
            raise WarehouseUnavailable(f"data version {version} has no record in the warehouse")
        with self._refresh_lock:  # the file cache and the database, one opener at a time
            try:
                localized = self._past_files(record.manifest)
            except (OSError, pa.ArrowException) as exc:
                raise WarehouseUnavailable(
                    f"data version {version}: cannot read {self.storage.url}: {exc}"
                ) from exc
            snapshot = DuckDBSnapshot.open(
                record.manifest, localized.files, self._database, lazy=True
            )
        size = sum(_size(local.path) for local in localized.files.values())
        with self._past_lock:
            held = self._past.setdefault(version, _Past(snapshot, size))
            self._past.move_to_end(version)
            self._live.add(held.snapshot)
            self._evict_past()
        return held.snapshot

    def _past_files(self, manifest: Manifest) -> Localized:
        """A past version's files: in place, on the record's row counts (checked when that
        version was current; a file gone since fails its view, a 503), else fetched."""
        if isinstance(self.files, InPlaceFiles):
            rows = {f.path: f.rows for name in TABLES for f in manifest.tables.get(name, {}).values()}  # fmt: skip
            return self.files.trusted(rows)
        return self.files.localize(served_files(manifest))

    def changes(self, version: int) -> dict[str, list[str]]:
        """What a retained version changed (market -> tables), from its record, remembered."""
        found = self._changes.get(version)
        if found is None:
            record = read_record(self.storage, version)
            found = {} if record is None else record.changed
            if len(self._changes) >= 4096:
                self._changes.clear()
            self._changes[version] = found
        return found

    def _evict_past(self) -> None:
        count, most_bytes = self._past_limits
        while len(self._past) > 1 and (
            len(self._past) > count or sum(p.bytes for p in self._past.values()) > most_bytes
        ):
            # Dropped, not closed: a request still reading it keeps it (and its schema) alive.
            self._past.popitem(last=False)

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
            retry = (
                self._failure is not None
                and time.monotonic() - self._failed_at >= self.retry_seconds
            )
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
        """The current version's check, made once when it loaded (no I/O here: `/api/v1/status`
        is public, so its cost must not grow with calls)."""
        if self._failure is not None:
            raise WarehouseUnavailable(self._failure)
        snapshot = self._snapshot
        if snapshot is None:
            raise WarehouseUnavailable("the warehouse has not been materialized yet")
        verified = self._verified
        if verified is None or verified[0] != snapshot.version:
            self._verify(snapshot)  # swapped in by another path than `_load` (tests)
            verified = self._verified
        assert verified is not None
        if verified[1] is not None:
            raise WarehouseUnavailable(verified[1])

    def _verify(self, snapshot: DuckDBSnapshot) -> None:
        try:
            snapshot.verify()
        except WarehouseUnavailable as exc:
            logger.warning("warehouse data version %s cannot be read: %s", snapshot.version, exc)
            self._verified = (snapshot.version, str(exc))
            return
        self._verified = (snapshot.version, None)

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
        with self._past_lock:
            for held in self._past.values():
                held.snapshot.close()
            self._past.clear()
        self._database.close()
        self.files.close()

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
        try:
            localized = self.files.localize(served_files(manifest))
        except (OSError, pa.ArrowException) as exc:
            raise WarehouseUnavailable(
                f"manifest version {manifest.version}: cannot read {self.storage.url}: {exc}"
            ) from exc
        snapshot = DuckDBSnapshot.open(manifest, localized.files, self._database)
        if self.prepare is not None:
            self.prepare(snapshot)
        self._live.add(snapshot)
        self._snapshot = snapshot  # the swap: one reference assignment
        seconds = time.perf_counter() - started  # the switch; what follows is housekeeping
        del current  # from here only requests still in flight keep the old snapshot alive
        self.files.release(
            {path for live in list(self._live) for path in served_files(live.manifest)}
        )
        self._verify(snapshot)
        self.last_load = VersionLoad(
            manifest.version, seconds, localized.fetched_files, localized.fetched_bytes
        )
        logger.info(
            "warehouse data version %s loaded from %s in %.3f s (%d files, %d bytes fetched)",
            manifest.version,
            self.storage.url,
            self.last_load.seconds,
            localized.fetched_files,
            localized.fetched_bytes,
        )
        return True
