"""Validation of raw instrument rows: raw strings -> (clean `instruments`, `instrument_rejects`)."""

from __future__ import annotations

import polars as pl

from pipelines.catalog import INSTRUMENT_REJECTS, INSTRUMENTS
from pipelines.prices.sources.base import RawInstruments
from pipelines.prices.validate import canonical_symbol

SYMBOL_PATTERN = r"^[A-Z0-9]+$"
MAX_NAME_LENGTH = 200
LOGO_PATTERN = r"^https?://[^\s/?#@]+(/[^\s]*)?$"
"""decisions.md, Inputs from sources: an absolute http or https URL with a host (no spaces, no
user info); any other scheme (`javascript:`, `data:`) or a relative reference is rejected."""
SHOWN = 60
"""Characters of a rejected value quoted in its reason (the whole row stays in `record`)."""


def shown(column: str) -> pl.Expr:
    """A rejected value as its reason quotes it: its first `SHOWN` characters."""
    value = pl.col(column)
    return (
        pl.when(value.str.len_chars() > SHOWN)
        .then(value.str.slice(0, SHOWN) + "...")
        .otherwise(value)
    )


def _reasons() -> list[pl.Expr]:
    symbol, name, logo = pl.col("symbol"), pl.col("name"), pl.col("logo")
    return [
        pl.when(symbol.is_null() | (symbol == ""))
        .then(pl.lit("symbol is empty"))
        .when(~symbol.str.contains(SYMBOL_PATTERN))
        .then(pl.format("symbol {} is not upper-case letters and digits", shown("symbol"))),
        pl.when(name.is_null() | (name == ""))
        .then(pl.lit("name is missing"))
        .when(name.str.len_chars() > MAX_NAME_LENGTH)
        .then(
            pl.format(f"name has {{}} characters, at most {MAX_NAME_LENGTH}", name.str.len_chars())
        ),
        pl.when((logo != "") & ~logo.str.to_lowercase().str.contains(LOGO_PATTERN)).then(
            pl.format("logo {} is not an absolute http or https URL", shown("logo"))
        ),
    ]


def validate_instruments(
    raw: RawInstruments, market: str, connector: str
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Split raw instruments into clean rows (sorted by symbol) and rejects with reasons.

    A repeated symbol keeps its first valid row and rejects the rest. A missing logo is stored as
    ''; one that is there must be an absolute http(s) URL, and a name at most `MAX_NAME_LENGTH`
    characters (decisions.md, Inputs from sources).
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
