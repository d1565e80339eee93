"""The warehouse catalog: every table's name, key and Parquet schema, written by the pipeline and read by the API."""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass
from pathlib import Path

import polars as pl

MARKETS: tuple[str, ...] = ("crypto", "forex", "commodities", "stocks")
"""Every real market, in the order the spec lists them."""

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


def _rejects(name: str, what: str) -> Table:
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


INSTRUMENTS = Table(
    name="instruments",
    description="Instrument metadata per market: canonical upper-case symbol, display name and logo URI.",
    columns=(
        Column("market", pl.String(), "market: crypto, forex, commodities or stocks"),
        Column("symbol", pl.String(), "canonical upper-case symbol, unique within the market"),
        Column("name", pl.String(), "display name"),
        Column("logo", pl.String(), "logo URI"),
        Column("source", pl.String(), "connector that supplied the row"),
    ),
    key=("market", "symbol"),
)

DAILY_PRICES = Table(
    name="daily_prices",
    description=(
        "Daily OHLCV bars: one row per symbol and calendar day (crypto) or trading day (others); "
        "`timestamp` is 00:00 UTC of `date` in ms."
    ),
    columns=(
        Column("market", pl.String(), "market of the instrument"),
        Column("symbol", pl.String(), "canonical upper-case symbol"),
        Column("date", pl.Date(), "the bar's day (UTC)"),
        Column("timestamp", pl.Int64(), "00:00 UTC of `date`, unix epoch milliseconds"),
        Column("open", pl.Float64(), "opening price, quote currency"),
        Column("high", pl.Float64(), "highest price of the day"),
        Column("low", pl.Float64(), "lowest price of the day"),
        Column("close", pl.Float64(), "closing price of the day"),
        Column(
            "volume",
            pl.Float64(),
            "traded volume in units of the instrument (0 where the source has none)",
        ),
        Column("source", pl.String(), "connector that supplied the row"),
    ),
    key=("market", "symbol", "date"),
)

RAW_NEWS = Table(
    name="raw_news",
    description="News items as parsed from the configured RSS/Atom feeds, deduplicated by article_id.",
    columns=(
        Column("market", pl.String(), "market whose feeds carried the item"),
        Column(
            "article_id", pl.String(), "stable id: hash of the item's guid, else its canonical link"
        ),
        Column("feed", pl.String(), "feed the item was first read from"),
        Column("guid", pl.String(), "the item's guid / Atom id", nullable=True),
        Column("link", pl.String(), "canonical link of the item", nullable=True),
        Column("title", pl.String(), "headline", nullable=True),
        Column("body", pl.String(), "text of the item, markup removed"),
        Column("published_at", pl.Datetime("ms", "UTC"), "publication instant, UTC"),
        Column("timestamp", pl.Int64(), "publication instant, unix epoch milliseconds"),
    ),
    key=("market", "article_id"),
)

INSTRUMENT_REJECTS = _rejects("instrument_rejects", "Instrument rows")
PRICE_REJECTS = _rejects("price_rejects", "Price rows")
NEWS_REJECTS = _rejects("news_rejects", "News items")

TABLES: dict[str, Table] = {
    t.name: t
    for t in (INSTRUMENTS, DAILY_PRICES, RAW_NEWS, INSTRUMENT_REJECTS, PRICE_REJECTS, NEWS_REJECTS)
}
"""Every warehouse table by name; the DuckDB views and the docs are generated from this."""


# The warehouse manifest: which immutable Parquet file holds each table partition right now.
#
# Writers never overwrite a Parquet file: each materialization writes a new file and then replaces
# `_manifest.json` atomically. A reader that loads the manifest once reads one consistent version of
# every table (no mix of old and new), and the manifest's `version` is the data version the API uses
# for ETags and caches.

MANIFEST_NAME = "_manifest.json"


@dataclass(frozen=True)
class PartitionFile:
    """One table partition as of a manifest version."""

    path: str
    """Path of the Parquet file, relative to the warehouse root."""
    rows: int
    written_at: str
    """ISO 8601 UTC instant the file was written."""


@dataclass(frozen=True)
class Manifest:
    """The current file of every table partition, and a version that changes with any of them."""

    version: int
    updated_at: str
    tables: dict[str, dict[str, PartitionFile]]
    """table name -> market -> file."""

    def files(self, table: str) -> list[str]:
        return [f.path for _, f in sorted(self.tables.get(table, {}).items())]


def read_manifest(warehouse_dir: Path) -> Manifest | None:
    """The warehouse's current manifest, or None before the first materialization."""
    path = warehouse_dir / MANIFEST_NAME
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    tables = {
        table: {market: PartitionFile(**entry) for market, entry in partitions.items()}
        for table, partitions in raw["tables"].items()
    }
    return Manifest(version=int(raw["version"]), updated_at=raw["updated_at"], tables=tables)


def write_manifest(warehouse_dir: Path, manifest: Manifest) -> None:
    """Replace the manifest atomically (write a temporary file, then rename over the old one)."""
    body = {
        "version": manifest.version,
        "updated_at": manifest.updated_at,
        "tables": {
            table: {market: asdict(f) for market, f in partitions.items()}
            for table, partitions in manifest.tables.items()
        },
    }
    target = warehouse_dir / MANIFEST_NAME
    temporary = target.with_name(f".{MANIFEST_NAME}.{os.getpid()}.tmp")
    temporary.write_text(json.dumps(body, indent=1, sort_keys=True), encoding="utf-8")
    os.replace(temporary, target)
