"""What Dagster shows of each table: the same facts the warehouse holds, so its UI tells the truth.

Two kinds: definition metadata every table asset carries (its columns from the catalog, where it
lives, its kinds and owner: `described`, applied to every asset spec when the Definitions are
assembled), and the metadata of each materialization (`row_counts`): `dagster/row_count` is the table's
rows once the run commits, all markets included, and the rows this run wrote are their own key,
so a day that adds 50 bars does not show a table of 50 rows.
"""

from __future__ import annotations

from typing import Any

import dagster as dg

from pipelines.catalog import MARKETS, TABLES
from pipelines.catalog.sql import duckdb_type
from pipelines.warehouse.staging import RunTransaction

ROWS_WRITTEN = "mi/rows_written"
"""Rows this run wrote to the table (new or recomputed), beside the table's own row count."""
OWNER = "team:market-data"
KINDS = {"parquet", "duckdb", "polars"}
"""How every table is written (Polars frames to Parquet) and read (a DuckDB view)."""


def row_counts(tx: RunTransaction, table: str, written: int) -> dict[str, Any]:
    """A materialization's row counts: the table's rows as this run will commit them (every
    market's partitions, staged or current), and the rows the run wrote."""
    total = sum(f.rows for m in MARKETS for f in tx.partitions(table, m).values())
    return {"dagster/row_count": total, ROWS_WRITTEN: written}


def described(spec: dg.AssetSpec, warehouse_url: str) -> dg.AssetSpec:
    """`spec` with its table's columns, location, kinds and owner; an asset that is no catalog
    table (a source drop, a publish step) keeps its spec but gets the owner."""
    table = TABLES.get(spec.key.path[-1])
    if table is None:
        return spec.merge_attributes(owners=[OWNER])
    schema = dg.TableSchema(
        columns=[
            dg.TableColumn(c.name, duckdb_type(c.dtype), description=c.description)
            for c in table.columns
        ]
    )
    metadata = {
        "dagster/column_schema": schema,
        "dagster/uri": f"{warehouse_url.rstrip('/')}/{table.name}",
        "dagster/table_name": f"warehouse.main.{table.name}",
    }
    return spec.merge_attributes(metadata=metadata, owners=[OWNER], kinds=KINDS)
