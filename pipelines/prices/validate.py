"""Validation of raw daily bars: raw strings -> (clean `daily_prices` rows, `price_rejects` rows)."""

from __future__ import annotations

from collections.abc import Callable, Collection
from dataclasses import dataclass

import numpy as np
import polars as pl

from pipelines.catalog import DAILY_PRICES, PRICE_REJECTS, WEEKDAY_MARKETS
from pipelines.prices.sources.base import BAR_FIELDS, PROVENANCE, RawBars

MS_PER_DAY = 86_400_000
DATE_FORMAT = "%Y-%m-%d"
PRICES = ("open", "high", "low", "close")
NUMBERS = (*PRICES, "volume")
BAR_SCHEMA = pl.Schema(
    {"symbol": pl.String(), "date": pl.Date(), **{c: pl.Float64() for c in NUMBERS}}
)
"""A clean bar before it is stored: the typed fields (market, source and timestamp come then)."""
BAR_COLUMNS = tuple(BAR_SCHEMA.names())
KEY = "key"
"""Rows given to `check_bars` carry this Int64 column, ascending in the order they were read."""
REJECT_COLUMNS = ("source", "location", "record", "reason")

Provenance = Callable[[pl.DataFrame], pl.DataFrame]
"""Source, location and record (in that order, one row each) of some rows given to `check_bars`."""


def canonical_symbol(column: str = "symbol") -> pl.Expr:
    """Symbols are matched case-insensitively and stored upper case, without surrounding blanks."""
    return pl.col(column).str.strip_chars().str.to_uppercase()


def _number(column: str) -> pl.Expr:
    return pl.col(column).str.strip_chars().cast(pl.Float64, strict=False)


def _rules(market: str) -> list[tuple[pl.Expr, pl.Expr]]:
    """Each rule as (broken, reason): `broken` is true exactly where `reason` is not null.

    They read the typed columns (`symbol` null when not an instrument) and the text as read
    (`raw_*`). The mask needs only the first, so the reasons are worked out for the rows that
    break a rule, not for every row.
    """
    rules: list[tuple[pl.Expr, pl.Expr]] = [
        (
            pl.col("date").is_null() & pl.col("raw_date").is_not_null(),
            pl.when(pl.col("date").is_null()).then(
                pl.format("unparseable date {}", pl.col("raw_date"))
            ),
        )
    ]
    for price in PRICES:
        value = pl.col(price)
        rules.append(
            (
                value.is_null() | value.is_nan() | value.is_infinite() | (value <= 0),
                pl.when(value.is_null() | value.is_nan())
                .then(pl.lit(f"{price} is missing or not a number"))
                .when(value.is_infinite() | (value <= 0))
                .then(
                    pl.format(
                        f"{price} is not a positive finite number ({{}})", pl.col(f"raw_{price}")
                    )
                ),
            )
        )
    high = pl.col("high") < pl.max_horizontal("open", "close")
    low = pl.col("low") > pl.min_horizontal("open", "close")
    volume = pl.col("volume")
    unknown = pl.col("symbol").is_null() & pl.col("raw_symbol").is_not_null()
    rules += [
        (high, pl.when(high).then(pl.lit("high is below max(open, close)"))),
        (low, pl.when(low).then(pl.lit("low is above min(open, close)"))),
        (
            volume.is_null() | volume.is_nan() | volume.is_infinite() | (volume < 0),
            pl.when(volume.is_null() | volume.is_nan())
            .then(pl.format("volume is not a number ({})", pl.col("raw_volume")))
            .when(volume.is_infinite())
            .then(pl.format("volume is not a finite number ({})", pl.col("raw_volume")))
            .when(volume < 0)
            .then(pl.lit("volume is negative")),
        ),
        (
            unknown,
            pl.when(unknown).then(
                pl.format(
                    "unknown symbol {} (not in the {} instrument list)",
                    canonical_symbol("raw_symbol"),
                    pl.lit(market),
                )
            ),
        ),
    ]
    if market in WEEKDAY_MARKETS:
        weekend = pl.col("date").dt.weekday() >= 6
        rules.append(
            (
                weekend,
                pl.when(weekend).then(
                    pl.format(
                        "{} is a weekend day; {} trades Monday to Friday", "date", pl.lit(market)
                    )
                ),
            )
        )
    return rules


def parse_bars(rows: pl.DataFrame) -> pl.DataFrame:
    """Typed columns of raw bar rows: symbols canonical, dates and numbers read from the trimmed
    text, an empty volume 0 (other columns are kept)."""
    volume = pl.col("volume").str.strip_chars()
    return rows.with_columns(
        symbol=canonical_symbol(),
        date=pl.col("date").str.strip_chars().str.to_date(DATE_FORMAT, strict=False),
        **{c: _number(c) for c in PRICES},
        volume=pl.when(volume.fill_null("") == "")
        .then(pl.lit(0.0))
        .otherwise(volume.cast(pl.Float64, strict=False)),
    )


def _typed(rows: pl.DataFrame, known: pl.Series) -> pl.DataFrame:
    """`parse_bars` of the rows' `BAR_FIELDS`, the symbol as an Enum of `known` (null when not one
    of them), trimming and upper-casing only the texts that do not parse as they are.

    A text that parses as it is parses to the same value once trimmed, and a known symbol is
    canonical when every known symbol is: the rest (padded or lower-case text, empty volumes,
    garbage) goes through `parse_bars`.
    """
    instruments = pl.Enum(known)
    canonical = known.equals(known.str.strip_chars().str.to_uppercase())
    symbol = pl.col("symbol") if canonical else canonical_symbol()
    fast = rows.select(
        symbol.cast(instruments, strict=False),
        pl.col("date").str.to_date(DATE_FORMAT, strict=False),
        *(pl.col(c).cast(pl.Float64, strict=False) for c in NUMBERS),
    )
    unparsed = [fast[c].is_null() & rows[c].is_not_null() for c in BAR_FIELDS]
    retry = pl.select(pl.any_horizontal(*unparsed, rows["volume"].is_null())).to_series()
    if not retry.any():
        return fast
    again = parse_bars(rows.filter(retry).select(BAR_FIELDS)).with_columns(
        pl.col("symbol").cast(instruments, strict=False)
    )
    where = retry.arg_true()
    return fast.with_columns(fast[c].clone().scatter(where, again[c]) for c in BAR_FIELDS)


@dataclass(frozen=True)
class CheckedBars:
    """Bars checked against every rule: clean typed rows, and rejects with their reason."""

    clean: pl.DataFrame
    """`BAR_SCHEMA` of the bars that pass, in the order read, one per (symbol, date); `symbol` is
    an Enum of the sorted instruments (its physical value is the symbol's position)."""
    invalid: pl.DataFrame
    """`REJECT_COLUMNS` of the rows that break a rule, in the order read."""
    duplicates: pl.DataFrame
    """`REJECT_COLUMNS` of valid rows of a (symbol, date) already read, in the order read."""
    dates: pl.Series
    """The date of every row given (null where it does not parse), in their order."""


def check_bars(
    rows: pl.DataFrame, market: str, instruments: Collection[str], provenance: Provenance
) -> CheckedBars:
    """Split raw bar rows (text fields, `KEY` ascending) into clean rows and rejects.

    A row failing several rules gets every reason joined by `; `. Duplicates of (symbol, date)
    among otherwise valid rows keep the first row read and reject the rest, naming where the kept
    row came from. `provenance` is asked only about rejected rows and the rows they name.
    """
    known = pl.Series("known", sorted(set(instruments)), dtype=pl.String)
    rules = _rules(market)
    typed = _typed(rows, known).with_columns(rows[KEY])
    parsed = pl.concat(
        [typed, rows.select(pl.col(c).alias(f"raw_{c}") for c in BAR_FIELDS)], how="horizontal"
    )
    broken = parsed.select(
        pl.any_horizontal(rule.fill_null(False) for rule, _ in rules).alias("broken")
    ).to_series()
    if broken.any():
        bad = parsed.filter(broken).rechunk()  # `pl.format` can panic on an empty chunk
        reasons = bad.select(
            pl.concat_str([reason for _, reason in rules], separator="; ", ignore_nulls=True)
        ).to_series()
        invalid = provenance(rows.filter(broken)).with_columns(reason=reasons)
        typed = typed.filter(~broken)
    else:
        invalid = _rejects()
    repeated = _repeated(typed, len(known))
    if repeated is None:
        return CheckedBars(
            typed.drop(KEY), invalid.select(REJECT_COLUMNS), _rejects(), parsed["date"]
        )
    again = typed.with_columns(first=pl.col(KEY).first().over("symbol", "date")).filter(repeated)
    named = rows.filter(pl.col(KEY).is_in(pl.concat([again[KEY], again["first"]]).implode()))
    where = provenance(named)
    place = dict(zip(named[KEY], where["source"] + " " + where["location"], strict=True))
    duplicates = provenance(rows.filter(pl.col(KEY).is_in(again[KEY].implode()))).with_columns(
        reason=pl.Series(
            [f"duplicate (symbol, date): kept the row at {place[k]}" for k in again["first"]],
            dtype=pl.String,
        )
    )
    clean = typed.filter(~repeated).drop(KEY)
    return CheckedBars(
        clean, invalid.select(REJECT_COLUMNS), duplicates.select(REJECT_COLUMNS), parsed["date"]
    )


def _repeated(typed: pl.DataFrame, instruments: int) -> pl.Series | None:
    """Which rows repeat the (symbol, date) of an earlier row; None when no row does.

    Counting rows per (symbol, day) cell answers "none" in one pass over integers when the cells
    are few (a batch of day files: its symbols times its days); hashing every pair is the rest.
    """
    if typed.height < 2:
        return None
    index = typed.select(pl.col("symbol").to_physical(), pl.col("date").cast(pl.Int64))
    if not any(index.null_count().row(0)):
        days = index["date"].to_numpy()
        first = int(days.min())
        span = int(days.max()) - first + 1
        if instruments * span <= max(4 * typed.height, 1 << 20):
            cells = index["symbol"].to_numpy().astype(np.int64) * span + (days - first)
            if int(np.bincount(cells).max()) < 2:
                return None
    repeated = typed.select(~pl.struct("symbol", "date").is_first_distinct()).to_series()
    return repeated if repeated.any() else None


def _rejects() -> pl.DataFrame:
    return pl.DataFrame(schema=dict.fromkeys(REJECT_COLUMNS, pl.String))


def stored_bars(clean: pl.DataFrame, market: str, connector: str) -> pl.DataFrame:
    """Clean bars (`BAR_COLUMNS`) as `daily_prices` rows: market, connector, timestamp added."""
    return DAILY_PRICES.conform(
        clean.with_columns(
            market=pl.lit(market),
            source=pl.lit(connector),
            timestamp=pl.col("date").cast(pl.Int64) * MS_PER_DAY,
        )
    )


def validate_bars(
    raw: RawBars, market: str, instruments: Collection[str], connector: str
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Split raw bars into clean rows (sorted by symbol, date) and rejects, each with its reason.

    Duplicates of (symbol, date) among otherwise valid rows keep the first row read and reject the
    rest, naming where the kept row came from.
    """
    rows = raw.rows.with_columns(pl.int_range(pl.len(), dtype=pl.Int64).alias(KEY))
    checked = check_bars(rows, market, instruments, lambda some: some.select(PROVENANCE))
    clean = stored_bars(checked.clean, market, connector).sort("symbol", "date")
    return clean, rejects_frame(market, checked.invalid, checked.duplicates, raw.unreadable)


def rejects_frame(market: str, *parts: pl.DataFrame) -> pl.DataFrame:
    """Rows of the rejects table (same schema for prices and instruments) from frames with reasons."""
    stacked = pl.concat([p.select(REJECT_COLUMNS) for p in parts])
    return PRICE_REJECTS.conform(stacked.with_columns(market=pl.lit(market)))
