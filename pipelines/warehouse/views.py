"""The DuckDB database: one view per catalog table over exactly the manifest's current Parquet files."""

from __future__ import annotations

import math
import os
from collections.abc import Iterator
from contextlib import contextmanager
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

import duckdb

from pipelines.catalog import TABLES, Manifest, Table
from pipelines.catalog.adjustments import adjusted_views_sql
from pipelines.catalog.sql import quote_identifier, quote_literal, view_over, view_sql
from pipelines.platform.retries import RetryableError, RetryPolicy, call

if TYPE_CHECKING:
    from pipelines.catalog.storage import S3Location

META_VIEW = "_warehouse"
"""A one-row view naming the manifest version and warehouse root the views were built from."""


STORAGE_VERSION = "v1.4.0"
"""The format the database file is written in: DuckDB 2.0's own is opened by 2.0 only, and the
DuckDB CLIs an analyst finds on the registries (duckdb-cli 1.4, 1.5 on PyPI) are older; a file of
views needs nothing newer. A file in another format is rebuilt in this one at the next refresh."""


class ViewsLockedError(RuntimeError):
    """The DuckDB file stayed locked by another process for longer than the timeout."""


def apply_object_views(
    con: duckdb.DuckDBPyConnection, location: S3Location, manifest: Manifest | None
) -> None:
    """`apply_views` for an s3:// warehouse, on an in-memory connection: DuckDB's httpfs extension
    cannot be assumed (it is downloaded at run time), so each table's current objects are
    registered as a pyarrow dataset (read lazily through pyarrow's S3 client) and viewed from it."""
    import pyarrow.dataset as ds  # here: with pandas its import would slow every command

    filesystem = location.filesystem()
    for table in TABLES.values():
        files = [location.arrow_path(p) for p in manifest.files(table.name)] if manifest else []
        source = None
        if files:
            source = quote_identifier(f"_objects_{table.name}")
            con.register(
                f"_objects_{table.name}", ds.dataset(files, filesystem=filesystem, format="parquet")
            )
        con.execute(view_over(table, source))
        for statement in comment_sql(table):
            con.execute(statement)
    for statement in adjusted_views_sql():
        con.execute(statement)
    version = manifest.version if manifest else 0
    con.execute(
        f"CREATE OR REPLACE VIEW {META_VIEW} AS SELECT CAST({version} AS BIGINT) AS version, "
        f"{quote_literal(location.url)} AS root"
    )


def comment_sql(table: Table) -> list[str]:
    """`COMMENT ON` statements carrying the catalog's descriptions into DuckDB."""
    name = quote_identifier(table.name)
    return [f"COMMENT ON VIEW {name} IS {quote_literal(table.description)}"] + [
        f"COMMENT ON COLUMN {name}.{quote_identifier(c.name)} IS {quote_literal(c.description)}"
        for c in table.columns
    ]


def apply_views(con: duckdb.DuckDBPyConnection, root: Path, manifest: Manifest | None) -> None:
    """Create every catalog view on `con` (a file or in-memory connection) as of `manifest`."""
    for table in TABLES.values():
        files = [root.resolve() / p for p in manifest.files(table.name)] if manifest else []
        con.execute(view_sql(table, [str(f) for f in files]))
        for statement in comment_sql(table):
            con.execute(statement)
    for statement in adjusted_views_sql():
        con.execute(statement)
    version = manifest.version if manifest else 0
    con.execute(
        f"CREATE OR REPLACE VIEW {META_VIEW} AS SELECT CAST({version} AS BIGINT) AS version, "
        f"{quote_literal(str(root.resolve()))} AS root"
    )


def refresh_views(
    duckdb_path: Path, root: Path, manifest: Manifest | None, *, timeout: float = 10.0
) -> None:
    """Rebuild the views in the database file in one transaction, holding it read-write briefly."""
    duckdb_path.parent.mkdir(parents=True, exist_ok=True)
    if not duckdb_path.exists():
        create_views_file(duckdb_path, root, manifest)
        return
    with _connect(duckdb_path, read_only=False, timeout=timeout) as con:
        if _storage_version(con) != f"{STORAGE_VERSION}+":
            con.close()
            create_views_file(duckdb_path, root, manifest)
            return
        con.execute("BEGIN TRANSACTION")
        apply_views(con, root, manifest)
        con.execute("COMMIT")


def _storage_version(con: duckdb.DuckDBPyConnection) -> str | None:
    row = con.execute(
        "SELECT tags['storage_version'] FROM duckdb_databases() "
        "WHERE database_name = current_database()"
    ).fetchone()
    return None if row is None else row[0]


def create_views_file(duckdb_path: Path, root: Path, manifest: Manifest | None) -> None:
    """A new database file with the views of `manifest`, made whole under a temporary name and
    renamed into place: a reader finds no file or a whole one, never a half-written one."""
    duckdb_path.parent.mkdir(parents=True, exist_ok=True)
    scratch = duckdb_path.with_name(f".{duckdb_path.name}.{os.getpid()}.tmp")
    scratch.unlink(missing_ok=True)
    try:
        with duckdb.connect(
            str(scratch), config={"storage_compatibility_version": STORAGE_VERSION}
        ) as con:
            con.execute("BEGIN TRANSACTION")
            apply_views(con, root, manifest)
            con.execute("COMMIT")
            con.execute("CHECKPOINT")
        os.replace(scratch, duckdb_path)
    finally:
        scratch.unlink(missing_ok=True)
        scratch.with_name(scratch.name + ".wal").unlink(missing_ok=True)


def views_version(duckdb_path: Path, *, timeout: float = 10.0) -> tuple[int, str] | None:
    """(manifest version, warehouse root) the file's views were built from; None without views."""
    if not duckdb_path.exists():
        return None
    with _connect(duckdb_path, read_only=True, timeout=timeout) as con:
        try:
            row = con.execute(f"SELECT version, root FROM {META_VIEW}").fetchone()
        except duckdb.CatalogException:
            return None
    return (int(row[0]), str(row[1])) if row else None


@contextmanager
def connect(duckdb_path: Path, *, timeout: float = 10.0) -> Iterator[duckdb.DuckDBPyConnection]:
    """A read-only connection to the database file, retrying while a writer holds it."""
    with _connect(duckdb_path, read_only=True, timeout=timeout) as con:
        yield con


@contextmanager
def _connect(path: Path, *, read_only: bool, timeout: float) -> Iterator[duckdb.DuckDBPyConnection]:
    try:
        con = call(_lock_wait(timeout), partial(_open, path, read_only))
    except _LockedError as error:
        raise ViewsLockedError(f"{path} is locked by another process: {error}") from error
    try:
        yield con
    finally:
        con.close()


def _lock_wait(timeout: float) -> RetryPolicy:
    """Waits from 20 ms doubling to 0.5 s until `timeout`; attempts enough that the timeout is
    what ends them."""
    return RetryPolicy(
        attempts=6 + math.ceil(timeout / 0.5),
        wait_initial=0.02,
        wait_max=0.5,
        wait_jitter=0.02,
        timeout=timeout,
    )


def _open(path: Path, read_only: bool) -> duckdb.DuckDBPyConnection:
    # DuckDB allows one read-write process or many read-only ones; a conflict is an IOException.
    try:
        return duckdb.connect(str(path), read_only=read_only)
    except duckdb.IOException as error:
        if "lock" not in str(error).lower():
            raise
        raise _LockedError(str(error)) from error


class _LockedError(RetryableError):
    """Another process holds the database file in a mode that excludes this one."""
