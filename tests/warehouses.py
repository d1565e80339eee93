"""Two warehouses compared table by table: what "the same tables" means in the tests that say so.

Floats compare within 1e-9 relative; rows compare by the table's key; columns holding when a run
happened (not what it computed) are left out; file names are compared relative to each data dir.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl
from polars.testing import assert_frame_equal

from pipelines.catalog import TABLES, Table, read_partitions
from pipelines.catalog.storage import WarehouseStorage

WALL_CLOCK = {"trend_segments": ["last_updated"]}
"""Columns holding when a run happened, not what it computed."""


def comparable(storage: WarehouseStorage, table: Table, data_dir: Path) -> pl.DataFrame:
    """The table in key order, without wall-clock columns, files named from the data dir."""
    frame = read_partitions(storage, table).drop(WALL_CLOCK.get(table.name, []))
    frame = frame.with_columns(pl.col(pl.String).str.replace_all(str(data_dir), "", literal=True))
    flat = [c for c, dtype in frame.schema.items() if not dtype.is_nested() and c not in table.key]
    return frame.sort([*table.key, *flat])


def assert_same_warehouse(
    a: WarehouseStorage, a_dir: Path, b: WarehouseStorage, b_dir: Path
) -> None:
    """Every table of the catalog holds the same rows in `a` as in `b`."""
    for table in TABLES.values():
        left, right = comparable(a, table, a_dir), comparable(b, table, b_dir)
        assert left.height == right.height, (
            f"{table.name}: {left.height} rows against {right.height}"
        )
        try:
            assert_frame_equal(left, right, rel_tol=1e-9, abs_tol=0.0)
        except AssertionError as error:
            raise AssertionError(f"{table.name}: {error}") from None
