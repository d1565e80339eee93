"""The catalog is the one source of truth for table names and schemas."""

from __future__ import annotations

from datetime import date

import polars as pl
import pytest

from pipelines.catalog import DAILY_PRICES, TABLES


def test_conform_orders_and_casts_columns_to_the_catalog_schema() -> None:
    frame = pl.DataFrame(
        {
            "source": ["t"],
            "volume": [5],
            "close": [2],
            "low": [1.0],
            "high": [3.0],
            "open": [2.0],
            "timestamp": [0],
            "date": [date(1970, 1, 1)],
            "symbol": ["BTC"],
            "market": ["crypto"],
        }
    )
    conformed = DAILY_PRICES.conform(frame)
    assert conformed.schema == DAILY_PRICES.schema


def test_conform_refuses_a_missing_column() -> None:
    with pytest.raises(ValueError, match="missing columns"):
        DAILY_PRICES.conform(pl.DataFrame({"market": ["crypto"]}))


def test_conform_refuses_nulls_in_a_non_nullable_column() -> None:
    frame = DAILY_PRICES.empty().vstack(DAILY_PRICES.empty())
    row = dict.fromkeys(DAILY_PRICES.column_names) | {"market": "crypto"}
    with pytest.raises(ValueError, match="nulls in non-nullable"):
        DAILY_PRICES.conform(pl.concat([frame, pl.DataFrame([row], schema=DAILY_PRICES.schema)]))


def test_every_table_is_keyed_by_its_own_columns() -> None:
    for table in TABLES.values():
        assert set(table.key) <= set(table.column_names), table.name
