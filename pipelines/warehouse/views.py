"""The DuckDB database: one view per catalog table over exactly the manifest's current Parquet files."""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

import duckdb
import polars as pl

from pipelines.catalog import TABLES, Manifest, Table

if TYPE_CHECKING:
    from pipelines.catalog.storage import S3Location

META_VIEW = "_warehouse"
"""A one-row view naming the manifest version and warehouse root the views were built from."""

_DUCKDB_TYPES: dict[type[pl.DataType], str] = {
    pl.String: "VARCHAR",
    pl.Int64: "BIGINT",
    pl.Int32: "INTEGER",
    pl.Int16: "SMALLINT",
    pl.Float32: "FLOAT",
    pl.Float64: "DOUBLE",
    pl.Boolean: "BOOLEAN",
    pl.Date: "DATE",
}


class ViewsLockedError(RuntimeError):
    """The DuckDB file stayed locked by another process for longer than the timeout."""


def duckdb_type(dtype: pl.DataType) -> str:
    """The DuckDB type a catalog column is exposed as."""
    if isinstance(dtype, pl.Datetime):
        return "TIMESTAMPTZ" if dtype.time_zone else "TIMESTAMP"
    if isinstance(dtype, pl.List):
        inner = dtype.inner if isinstance(dtype.inner, pl.DataType) else dtype.inner()
        return f"{duckdb_type(inner)}[]"
    try:
        return _DUCKDB_TYPES[type(dtype)]
    except KeyError:
        raise TypeError(f"no DuckDB type for catalog dtype {dtype}") from None


def view_sql(table: Table, files: Sequence[Path]) -> str:
    """`CREATE OR REPLACE VIEW` over `files`, or an empty typed view when there are none."""
    paths = ", ".join(_literal(str(p)) for p in files)
    return _view_sql(table, f"read_parquet([{paths}])" if files else None)


def _view_sql(table: Table, source: str | None) -> str:
    columns = ", ".join(
        f"CAST({_ident(c.name) if source else 'NULL'} AS {duckdb_type(c.dtype)}) AS {_ident(c.name)}"
        for c in table.columns
    )
    if source is None:
        return f"CREATE OR REPLACE VIEW {_ident(table.name)} AS SELECT {columns} WHERE false"
    return f"CREATE OR REPLACE VIEW {_ident(table.name)} AS SELECT {columns} FROM {source}"


def apply_object_views(
    con: duckdb.DuckDBPyConnection, location: S3Location, manifest: Manifest | None
) -> None:
    """`apply_views` for an s3:// warehouse, on an in-memory connection: DuckDB's httpfs extension
    cannot be assumed (it is downloaded at run time), so each table's current objects are
    registered as a pyarrow dataset (read lazily through pyarrow's S3 client) and viewed from it."""
    import pyarrow.dataset as ds  # here: with pandas it costs every command 0.35 s at import

    filesystem = location.filesystem()
    for table in TABLES.values():
        files = [location.arrow_path(p) for p in manifest.files(table.name)] if manifest else []
        source = None
        if files:
            source = _ident(f"_objects_{table.name}")
            con.register(f"_objects_{table.name}", ds.dataset(files, filesystem=filesystem, format="parquet"))  # fmt: skip
        con.execute(_view_sql(table, source))
        for statement in comment_sql(table):
            con.execute(statement)
    version = manifest.version if manifest else 0
    con.execute(
        f"CREATE OR REPLACE VIEW {META_VIEW} AS SELECT CAST({version} AS BIGINT) AS version, "
        f"{_literal(location.url)} AS root"
    )


def comment_sql(table: Table) -> list[str]:
    """`COMMENT ON` statements carrying the catalog's descriptions into DuckDB."""
    name = _ident(table.name)
    return [f"COMMENT ON VIEW {name} IS {_literal(table.description)}"] + [
        f"COMMENT ON COLUMN {name}.{_ident(c.name)} IS {_literal(c.description)}"
        for c in table.columns
    ]


def apply_views(con: duckdb.DuckDBPyConnection, root: Path, manifest: Manifest | None) -> None:
    """Create every catalog view on `con` (a file or in-memory connection) as of `manifest`."""
    for table in TABLES.values():
        files = [root.resolve() / p for p in manifest.files(table.name)] if manifest else []
        con.execute(view_sql(table, files))
        for statement in comment_sql(table):
            con.execute(statement)
    version = manifest.version if manifest else 0
    con.execute(
        f"CREATE OR REPLACE VIEW {META_VIEW} AS SELECT CAST({version} AS BIGINT) AS version, "
        f"{_literal(str(root.resolve()))} AS root"
    )


def refresh_views(
    duckdb_path: Path, root: Path, manifest: Manifest | None, *, timeout: float = 10.0
) -> None:
    """Rebuild the views in the database file in one transaction, holding it read-write briefly."""
    duckdb_path.parent.mkdir(parents=True, exist_ok=True)
    with _connect(duckdb_path, read_only=False, timeout=timeout) as con:
        con.execute("BEGIN TRANSACTION")
        apply_views(con, root, manifest)
        con.execute("COMMIT")


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
    # DuckDB allows one read-write process or many read-only ones; a conflict is an IOException.
    deadline = time.monotonic() + timeout
    delay = 0.02
    while True:
        try:
            con = duckdb.connect(str(path), read_only=read_only)
            break
        except duckdb.IOException as error:
            if "lock" not in str(error).lower():
                raise
            if time.monotonic() >= deadline:
                raise ViewsLockedError(f"{path} is locked by another process: {error}") from error
            time.sleep(delay)
            delay = min(delay * 2, 0.5)
    try:
        yield con
    finally:
        con.close()


def _ident(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"
