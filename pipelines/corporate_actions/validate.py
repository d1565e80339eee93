"""Validation of raw corporate action rows: raw strings -> (clean `corporate_actions`, rejects)."""

from __future__ import annotations

from collections.abc import Collection

import polars as pl

from pipelines.catalog import CORPORATE_ACTION_KINDS, CORPORATE_ACTION_REJECTS, CORPORATE_ACTIONS
from pipelines.instruments.validate import SYMBOL_PATTERN, shown
from pipelines.prices.sources.base import RawActions
from pipelines.prices.validate import DATE_FORMAT, canonical_symbol

MAX_REASON_LENGTH = 200
NUMBER_PATTERN = r"^(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)$"
"""A ratio or an amount: a plain positive decimal (no sign, exponent, `nan` or `inf`)."""
NEEDS = {"split": "ratio", "dividend": "amount"}
"""The number each kind carries; every other number of a row must be empty."""


def _number_reasons(number: str) -> list[pl.Expr]:
    """A kind that carries `number` needs it positive (a split's ratio other than 1); any other
    kind must leave it empty."""
    text, kind, value = pl.col(number), pl.col("kind"), pl.col(f"_{number}")
    carriers = [k for k, needed in NEEDS.items() if needed == number]
    carried = kind.is_in(carriers)
    return [
        pl.when(carried & (text == ""))
        .then(pl.format(f"a {{}} needs its {number}", kind))
        .when(carried & ~text.str.contains(NUMBER_PATTERN))
        .then(pl.format(f"{number} {{}} is not a plain decimal", shown(number)))
        .when(carried & (value <= 0))
        .then(pl.lit(f"{number} must be above 0"))
        .when(carried & (kind == "split") & (value == 1))
        .then(pl.lit("a split's ratio of 1 changes nothing"))
        .when(~carried & kind.is_in(CORPORATE_ACTION_KINDS) & (text != ""))
        .then(pl.format(f"a {{}} has no {number}", kind)),
    ]


def _reasons(instruments: pl.Series, market: str) -> list[pl.Expr]:
    symbol, kind, reason = pl.col("symbol"), pl.col("kind"), pl.col("reason")
    return [
        pl.when(symbol == "")
        .then(pl.lit("symbol is empty"))
        .when(~symbol.str.contains(SYMBOL_PATTERN))
        .then(pl.format("symbol {} is not upper-case letters and digits", shown("symbol")))
        .when(~symbol.is_in(instruments.implode()))
        .then(pl.format(f"unknown symbol {{}} (not in the {market} instrument list)", symbol)),
        pl.when(pl.col("_date").is_null()).then(pl.format("unparseable date {}", shown("date"))),
        pl.when(~kind.is_in(CORPORATE_ACTION_KINDS)).then(
            pl.format(
                "kind {} is not one of {}",
                shown("kind"),
                pl.lit(", ".join(CORPORATE_ACTION_KINDS)),
            )
        ),
        *_number_reasons("ratio"),
        *_number_reasons("amount"),
        pl.when(reason.str.len_chars() > MAX_REASON_LENGTH).then(
            pl.format(
                f"reason has {{}} characters, at most {MAX_REASON_LENGTH}", reason.str.len_chars()
            )
        ),
    ]


def validate_actions(
    raw: RawActions, market: str, instruments: Collection[str], connector: str
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Split raw corporate actions into clean rows (sorted by symbol, date, kind) and rejects.

    Fields are trimmed; symbols and kinds are matched in any case. A split carries its `ratio`
    (new shares per old, above 0 and not 1), a dividend its `amount` (above 0), and neither the
    other number; listings and delistings carry none; `reason` is optional text. A repeated
    (symbol, date, kind) keeps its first valid row and rejects the rest.
    """
    known = pl.Series(sorted(set(instruments)), dtype=pl.String)
    text = ("date", "kind", "ratio", "amount", "reason")
    rows = raw.rows.with_columns(
        symbol=canonical_symbol().fill_null(""),
        **{c: pl.col(c).str.strip_chars().fill_null("") for c in text},
    ).with_columns(
        kind=pl.col("kind").str.to_lowercase(),
        _date=pl.col("date").str.to_date(DATE_FORMAT, strict=False),
        _ratio=pl.col("ratio").cast(pl.Float64, strict=False),
        _amount=pl.col("amount").cast(pl.Float64, strict=False),
    )
    found = pl.concat_str(_reasons(known, market), separator="; ", ignore_nulls=True)
    rows = rows.with_columns(reason_=found).with_columns(
        reason_=pl.when(pl.col("reason_") != "").then("reason_")
    )
    key = ["symbol", "_date", "kind"]
    valid = rows.filter(pl.col("reason_").is_null()).with_columns(
        reason_=pl.when(~pl.struct(key).is_first_distinct()).then(
            pl.format(
                "duplicate (symbol, date, kind): kept the row at {}",
                pl.col("location").first().over(key),
            )
        )
    )
    clean = valid.filter(pl.col("reason_").is_null()).select(
        "symbol",
        date="_date",
        kind="kind",
        ratio="_ratio",
        amount="_amount",
        reason=pl.when(pl.col("reason") != "").then("reason"),
        market=pl.lit(market),
        source=pl.lit(connector),
    )
    invalid = [f.filter(pl.col("reason_").is_not_null()) for f in (rows, valid)]
    columns = ["source", "location", "record", pl.col("reason_").alias("reason")]
    rejects = pl.concat([*(f.select(columns) for f in invalid), raw.unreadable])
    return (
        CORPORATE_ACTIONS.conform(clean.sort("symbol", "date", "kind")),
        CORPORATE_ACTION_REJECTS.conform(rejects.with_columns(market=pl.lit(market))),
    )
