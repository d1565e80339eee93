"""Validation of raw daily bars: raw strings -> (clean `daily_prices` rows, `price_rejects` rows)."""

from __future__ import annotations

from collections.abc import Collection

import polars as pl

from pipelines.catalog import DAILY_PRICES, PRICE_REJECTS, WEEKDAY_MARKETS
from pipelines.prices.sources.base import RawBars

MS_PER_DAY = 86_400_000
PRICES = ("open", "high", "low", "close")


def canonical_symbol(column: str = "symbol") -> pl.Expr:
    """Symbols are matched case-insensitively and stored upper case, without surrounding blanks."""
    return pl.col(column).str.strip_chars().str.to_uppercase()


def _number(column: str) -> pl.Expr:
    return pl.col(column).str.strip_chars().cast(pl.Float64, strict=False)


def _row_reasons(market: str, known: pl.Series) -> list[pl.Expr]:
    """One expression per rule, each null when the row passes it, else the reason in words."""
    reasons: list[pl.Expr] = [
        pl.when(pl.col("date").is_null()).then(pl.format("unparseable date {}", pl.col("raw_date")))
    ]
    for price in PRICES:
        value = pl.col(price)
        reasons.append(
            pl.when(value.is_null() | value.is_nan())
            .then(pl.lit(f"{price} is missing or not a number"))
            .when(value.is_infinite() | (value <= 0))
            .then(
                pl.format(f"{price} is not a positive finite number ({{}})", pl.col(f"raw_{price}"))
            )
        )
    reasons += [
        pl.when(pl.col("high") < pl.max_horizontal("open", "close")).then(
            pl.lit("high is below max(open, close)")
        ),
        pl.when(pl.col("low") > pl.min_horizontal("open", "close")).then(
            pl.lit("low is above min(open, close)")
        ),
        pl.when(pl.col("volume").is_null() | pl.col("volume").is_nan())
        .then(pl.format("volume is not a number ({})", pl.col("raw_volume")))
        .when(pl.col("volume") < 0)
        .then(pl.lit("volume is negative")),
        pl.when(~pl.col("symbol").is_in(known.implode())).then(
            pl.format("unknown symbol {} (not in the {} instrument list)", "symbol", pl.lit(market))
        ),
    ]
    if market in WEEKDAY_MARKETS:
        reasons.append(
            pl.when(pl.col("date").dt.weekday() >= 6).then(
                pl.format("{} is a weekend day; {} trades Monday to Friday", "date", pl.lit(market))
            )
        )
    return reasons


def parse_bars(rows: pl.DataFrame) -> pl.DataFrame:
    """Typed columns beside the raw text (kept as `raw_*` for the reasons); empty volume means 0."""
    return rows.with_columns(
        symbol=canonical_symbol(),
        raw_date=pl.col("date"),
        date=pl.col("date").str.strip_chars().str.to_date("%Y-%m-%d", strict=False),
        **{f"raw_{c}": pl.col(c) for c in (*PRICES, "volume")},
        **{c: _number(c) for c in PRICES},
        volume=pl.when(pl.col("volume").str.strip_chars().fill_null("") == "")
        .then(pl.lit(0.0))
        .otherwise(_number("volume")),
    )


def validate_bars(
    raw: RawBars, market: str, instruments: Collection[str], connector: str
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Split raw bars into clean rows (sorted by symbol, date) and rejects, each with its reason.

    Duplicates of (symbol, date) among otherwise valid rows keep the first row read and reject the
    rest, naming where the kept row came from.
    """
    known = pl.Series("known", sorted(instruments), dtype=pl.String)
    parsed = parse_bars(raw.rows).with_columns(
        reason=pl.concat_str(_row_reasons(market, known), separator="; ", ignore_nulls=True)
    )
    parsed = parsed.with_columns(reason=pl.when(pl.col("reason") != "").then("reason"))
    valid = parsed.filter(pl.col("reason").is_null())
    first = pl.col("location").first().over("symbol", "date")
    first_source = pl.col("source").first().over("symbol", "date")
    valid = valid.with_columns(
        reason=pl.when(~pl.struct("symbol", "date").is_first_distinct()).then(
            pl.format("duplicate (symbol, date): kept the row at {} {}", first_source, first)
        )
    )
    clean = valid.filter(pl.col("reason").is_null()).sort("symbol", "date")
    clean = clean.with_columns(
        market=pl.lit(market),
        source=pl.lit(connector),
        timestamp=pl.col("date").cast(pl.Int64) * MS_PER_DAY,
    )
    invalid = pl.concat(
        [
            parsed.filter(pl.col("reason").is_not_null()),
            valid.filter(pl.col("reason").is_not_null()),
        ]
    )
    return DAILY_PRICES.conform(clean), rejects_frame(market, invalid, raw.unreadable)


def rejects_frame(market: str, *parts: pl.DataFrame) -> pl.DataFrame:
    """Rows of the rejects table (same schema for prices and instruments) from frames with reasons."""
    columns = ["source", "location", "record", "reason"]
    stacked = pl.concat([p.select(columns) for p in parts])
    return PRICE_REJECTS.conform(stacked.with_columns(market=pl.lit(market)))
