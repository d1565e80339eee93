"""Validation of raw instrument rows: raw strings -> (clean `instruments`, `instrument_rejects`)."""

from __future__ import annotations

import polars as pl

from pipelines.catalog import INSTRUMENT_REJECTS, INSTRUMENTS
from pipelines.prices.sources.base import RawInstruments
from pipelines.prices.validate import canonical_symbol

SYMBOL_PATTERN = r"^[A-Z0-9]+$"


def _reasons() -> list[pl.Expr]:
    symbol = pl.col("symbol")
    return [
        pl.when(symbol.is_null() | (symbol == ""))
        .then(pl.lit("symbol is empty"))
        .when(~symbol.str.contains(SYMBOL_PATTERN))
        .then(pl.format("symbol {} is not upper-case letters and digits", symbol)),
        pl.when(pl.col("name").is_null() | (pl.col("name") == "")).then(pl.lit("name is missing")),
    ]


def validate_instruments(
    raw: RawInstruments, market: str, connector: str
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Split raw instruments into clean rows (sorted by symbol) and rejects with reasons.

    A repeated symbol keeps its first valid row and rejects the rest. A missing logo is stored as ''.
    """
    rows = raw.rows.with_columns(
        symbol=canonical_symbol(),
        name=pl.col("name").str.strip_chars(),
        logo=pl.col("logo").str.strip_chars().fill_null(""),
    )
    rows = rows.with_columns(reason=pl.concat_str(_reasons(), separator="; ", ignore_nulls=True))
    rows = rows.with_columns(reason=pl.when(pl.col("reason") != "").then("reason"))
    valid = rows.filter(pl.col("reason").is_null()).with_columns(
        reason=pl.when(~pl.col("symbol").is_first_distinct()).then(
            pl.format(
                "duplicate symbol: kept the row at {}", pl.col("location").first().over("symbol")
            )
        )
    )
    clean = valid.filter(pl.col("reason").is_null()).sort("symbol")
    clean = clean.with_columns(market=pl.lit(market), source=pl.lit(connector))
    invalid = [f.filter(pl.col("reason").is_not_null()) for f in (rows, valid)]
    columns = ["source", "location", "record", "reason"]
    rejects = pl.concat([f.select(columns) for f in (*invalid, raw.unreadable)])
    return INSTRUMENTS.conform(clean), INSTRUMENT_REJECTS.conform(
        rejects.with_columns(market=pl.lit(market))
    )
