"""Properties of the raw layer as pure functions: each returns the rows that break one property."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date

import polars as pl

from pipelines.catalog import WEEKDAY_MARKETS
from pipelines.catalog.quality import on_calendar


def duplicate_keys(frame: pl.DataFrame, key: list[str]) -> pl.DataFrame:
    """Every row whose key occurs more than once."""
    return frame.filter(pl.len().over(key) > 1).sort(key)


def non_positive_prices(prices: pl.DataFrame) -> pl.DataFrame:
    """Bars with an open, high, low or close that is not a positive finite number."""
    bad = [~(pl.col(c).is_finite() & (pl.col(c) > 0)) for c in ("open", "high", "low", "close")]
    return prices.filter(pl.any_horizontal(bad))


def high_below_open_close(prices: pl.DataFrame) -> pl.DataFrame:
    """Bars whose high is below max(open, close)."""
    return prices.filter(pl.col("high") < pl.max_horizontal("open", "close"))


def low_above_open_close(prices: pl.DataFrame) -> pl.DataFrame:
    """Bars whose low is above min(open, close)."""
    return prices.filter(pl.col("low") > pl.min_horizontal("open", "close"))


def duplicate_bars(prices: pl.DataFrame) -> pl.DataFrame:
    """Every bar whose (market, symbol, date) occurs more than once. Counted per series first: a
    series with as many days as bars has no repeat, and only the others' rows are looked at (a
    count broadcast to every row over the three keys was a visible part of a first load's price
    step)."""
    counts = prices.group_by("market", "symbol").agg(rows=pl.len(), days=pl.col("date").n_unique())
    repeated = counts.filter(pl.col("rows") > pl.col("days")).select("market", "symbol")
    return duplicate_keys(
        prices.join(repeated, on=["market", "symbol"]), ["market", "symbol", "date"]
    )


def missing_trading_days(prices: pl.DataFrame, market: str) -> pl.DataFrame:
    """(symbol, date) of every expected day absent between a series' first and last bar.

    Crypto expects every calendar day; the other markets Monday to Friday (holidays show up here,
    which is why the check only warns). A series holding as many distinct expected days as its
    span has is complete; only the others are spelled out day by day.
    """
    weekdays = market in WEEKDAY_MARKETS
    expected_day = on_calendar(pl.col("date"), market)
    after_last = pl.col("last") + pl.duration(days=1)
    span = (
        pl.business_day_count("first", after_last)
        if weekdays
        else (after_last - pl.col("first")).dt.total_days()
    )
    spans = (
        prices.group_by("symbol")
        .agg(
            first=pl.col("date").min(),
            last=pl.col("date").max(),
            present=pl.col("date").filter(expected_day).n_unique(),
        )
        .filter(pl.col("present") < span)
    )
    expected = (
        spans.select("symbol", date=pl.date_ranges("first", "last", interval="1d"))
        .explode("date")
        .filter(expected_day)
    )
    present = prices.join(spans.select("symbol"), on="symbol").select("symbol", "date")
    return expected.join(present, on=["symbol", "date"], how="anti").sort("symbol", "date")


def stale_symbols(
    prices: pl.DataFrame, reference: date, max_age_days: int, listed: Sequence[str] = ()
) -> pl.DataFrame:
    """Symbols whose newest bar is more than `max_age_days` before `reference`, with the age, and
    the `listed` symbols without any bar (newest and age null): a symbol whose every answer was
    unreadable is not fresh."""
    newest = prices.group_by("symbol").agg(newest=pl.col("date").max())
    aged = newest.with_columns(age_days=(pl.lit(reference) - pl.col("newest")).dt.total_days())
    stale = aged.filter(pl.col("age_days") > max_age_days)
    never = pl.DataFrame({"symbol": sorted(set(listed))}, schema={"symbol": pl.String}).join(
        newest.select("symbol"), on="symbol", how="anti"
    )
    return pl.concat([stale, never], how="diagonal_relaxed").sort("symbol")


MOVE_LIMIT = 0.40
"""A stock's close-to-close move beyond this fraction (either way) needs a corporate action."""
MOVE_MARKETS = frozenset({"stocks"})
"""Markets whose sources report corporate actions, so that a large move without one is suspect."""


def unexplained_moves(bars: pl.DataFrame, actions: pl.DataFrame) -> pl.DataFrame:
    """(symbol, date, move) of every bar whose close moved more than `MOVE_LIMIT` from the
    symbol's previous close on a day without a corporate action of that symbol (`actions`:
    symbol, date). A 4-for-1 split shown unadjusted is a 75% fall: the split's row explains it;
    without one, either the action is missing or the bar is wrong."""
    moved = (
        bars.select("symbol", "date", "close")
        .sort("symbol", "date")
        .with_columns(move=pl.col("close") / pl.col("close").shift(1).over("symbol") - 1.0)
        .filter(pl.col("move").abs() > MOVE_LIMIT)
    )
    acted = actions.select("symbol", "date").unique()
    return moved.join(acted, on=["symbol", "date"], how="anti").drop("close")


def reasons_by_count(rejects: pl.DataFrame) -> pl.DataFrame:
    """How many rejects each reason has, most frequent first."""
    counts = rejects.group_by("reason").agg(count=pl.len())
    return counts.sort(["count", "reason"], descending=[True, False])
