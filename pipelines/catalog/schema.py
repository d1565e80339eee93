"""How the catalog describes a table: columns with types, nullability and meaning; a key; conformance."""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl

MARKETS: tuple[str, ...] = ("crypto", "forex", "commodities", "stocks")
"""Every real market, in the order the spec lists them."""

STRATEGIES: tuple[str, ...] = ("aggressive", "conservative")
"""The trading strategies the simulator backtests, in the spec's order (their rules live in
`pipelines.simulator.strategies`)."""

FILLS: tuple[str, ...] = ("close", "next_open")
"""How a backtest fills its orders: at the close of the signal's bar (the default, what current
actions and scorecards use) or at the next bar's open (docs/trade-simulator.md)."""

WEEKDAY_MARKETS: frozenset[str] = frozenset({"forex", "commodities", "stocks"})
"""Markets with one bar per trading day (Monday to Friday); crypto trades every calendar day."""


@dataclass(frozen=True)
class Column:
    """One column of a table: its name, Polars type, whether it may hold nulls, and what it means."""

    name: str
    dtype: pl.DataType
    description: str
    nullable: bool = False


@dataclass(frozen=True)
class Table:
    """A warehouse table: partitioned by market, stored as one Parquet file per partition."""

    name: str
    description: str
    columns: tuple[Column, ...]
    key: tuple[str, ...]
    compressed: bool = True
    """Whether its files are zstd-compressed. Not for a table of high-entropy floats (the
    indicators' carried state), which zstd barely shrinks and makes slower to write and to read
    (docs/warehouse.md)."""

    @property
    def schema(self) -> pl.Schema:
        return pl.Schema({c.name: c.dtype for c in self.columns})

    @property
    def column_names(self) -> list[str]:
        return [c.name for c in self.columns]

    def empty(self) -> pl.DataFrame:
        return pl.DataFrame(schema=self.schema)

    def conform(self, frame: pl.DataFrame) -> pl.DataFrame:
        """Select and cast to the catalog schema, refusing missing columns and nulls where none may be.

        Assets pass every output through here so that what lands in Parquet is exactly what the
        catalog documents, whatever order or integer width the computation produced.
        """
        missing = [c for c in self.column_names if c not in frame.columns]
        if missing:
            raise ValueError(f"{self.name}: missing columns {missing}")
        conformed = frame.select(pl.col(c.name).cast(c.dtype, strict=True) for c in self.columns)
        required = [c.name for c in self.columns if not c.nullable]
        null_counts = conformed.select(pl.col(required).null_count()).row(0, named=True)
        with_nulls = {name: n for name, n in null_counts.items() if n}
        if with_nulls:
            raise ValueError(f"{self.name}: nulls in non-nullable columns {with_nulls}")
        return conformed


def rejects_table(name: str, what: str) -> Table:
    return Table(
        name=name,
        description=f"{what} that failed validation, kept with the reason (nothing is dropped silently).",
        columns=(
            Column("market", pl.String(), "market the record was read for"),
            Column("source", pl.String(), "file path or URL the record came from"),
            Column(
                "location", pl.String(), "where in the source: line number, item index or JSON path"
            ),
            Column("record", pl.String(), "the raw record as read, as text"),
            Column("reason", pl.String(), "why the record was rejected, in words"),
        ),
        key=("source", "location"),
    )
