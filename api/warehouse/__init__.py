"""The warehouse reader: the one interface through which the API reads tables."""

from api.warehouse.duckdb_reader import DuckDBSnapshot, DuckDBWarehouseReader
from api.warehouse.reader import (
    QueryParams,
    WarehouseReader,
    WarehouseSnapshot,
    WarehouseUnavailable,
)

__all__ = [
    "DuckDBSnapshot",
    "DuckDBWarehouseReader",
    "QueryParams",
    "WarehouseReader",
    "WarehouseSnapshot",
    "WarehouseUnavailable",
]
