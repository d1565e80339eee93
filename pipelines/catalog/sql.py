"""DuckDB SQL for the catalog's tables: quoting, column types and the view over a table's files.

The one view builder and quoting helper of the project: the pipeline's warehouse database
(`pipelines.warehouse.views`) and the API's in-memory snapshots (`api.warehouse`) both use it.
"""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl

from pipelines.catalog.schema import Table

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


def quote_identifier(name: str) -> str:
    """A DuckDB identifier, double-quoted (any name is safe)."""
    return '"' + name.replace('"', '""') + '"'


def quote_literal(text: str) -> str:
    """A DuckDB string literal, single-quoted (any text is safe)."""
    return "'" + text.replace("'", "''") + "'"


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


def view_sql(table: Table, files: Sequence[str], name: str | None = None) -> str:
    """`CREATE OR REPLACE VIEW` of `table` over the Parquet `files` (paths DuckDB can read), or an
    empty view of the catalog's types when there are none; `name` (quoted already, may be
    schema-qualified) instead of the table's own."""
    paths = ", ".join(quote_literal(f) for f in files)
    return view_over(table, f"read_parquet([{paths}])" if files else None, name)


def view_over(table: Table, source: str | None, name: str | None = None) -> str:
    """`CREATE OR REPLACE VIEW` of `table` selecting its catalog columns, typed, from `source` (a
    table expression; None: no rows), named `name` (quoted; default the table's name)."""
    columns = ", ".join(
        f"CAST({quote_identifier(c.name) if source else 'NULL'} AS {duckdb_type(c.dtype)}) "
        f"AS {quote_identifier(c.name)}"
        for c in table.columns
    )
    name = name or quote_identifier(table.name)
    if source is None:
        return f"CREATE OR REPLACE VIEW {name} AS SELECT {columns} WHERE false"
    return f"CREATE OR REPLACE VIEW {name} AS SELECT {columns} FROM {source}"
