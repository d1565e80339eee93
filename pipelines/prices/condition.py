"""Each day's condition from the daily prices' checks: the findings a symbol carries, and `price_days`.

A run checks only the bars it wrote, so findings are carried between runs, per symbol and day, in
`price_findings`: a symbol's findings from its first written day on are replaced by what the run
found there, a removed symbol's go, and freshness (a property of the whole market at the run's day)
is found afresh. What is carried is therefore what checking every stored bar would find, and an
incremental day writes the `price_days` a full run writes.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date, timedelta

import polars as pl

from pipelines.catalog import DAILY_PRICES, PRICE_DAYS
from pipelines.catalog.quality import check_name, on_calendar, trades_on
from pipelines.catalog.state import PRICE_FINDINGS

FRESH = check_name(DAILY_PRICES.name, "fresh")
GAP = check_name(DAILY_PRICES.name, "no_missing_trading_days")
MOVES = check_name(DAILY_PRICES.name, "moves_explained")
UNPRICED = check_name(DAILY_PRICES.name, "dividends_priced")
AFRESH = (FRESH, MOVES, UNPRICED)
"""Found afresh each run over the whole market: freshness (a property of the run's day) and
unexplained moves (a corporate action reported later explains an old one)."""


def _finding(frame: pl.DataFrame, market: str, check: str, severity: str) -> pl.DataFrame:
    return frame.select(
        market=pl.lit(market),
        symbol="symbol",
        date="date",
        check=pl.lit(check),
        severity=pl.lit(severity),
    )


def row_findings(market: str, offending: dict[str, tuple[pl.DataFrame, str]]) -> pl.DataFrame:
    """This run's findings in its written bars: check name -> (offending rows with `market`,
    `symbol` and `date`, severity), as the checks of `pipelines.prices.assets` decided them."""
    frames = [
        _finding(rows.filter(pl.col("market") == market), market, check, severity)
        for check, (rows, severity) in offending.items()
        if rows.height
    ]
    return pl.concat([PRICE_FINDINGS.empty(), *frames], how="vertical_relaxed")


def boundary_gaps(market: str, written: pl.DataFrame, before: pl.DataFrame) -> pl.DataFrame:
    """The expected days between a symbol's last stored bar before the run (`before`: symbol,
    last_date) and its first written one (`written`: symbol, first): a gap a check of the written
    bars alone cannot see, and one checking the whole series finds."""
    spans = written.join(before.select("symbol", "last_date"), on="symbol").filter(
        pl.col("first") > pl.col("last_date") + pl.duration(days=1)
    )
    days = spans.select(
        "symbol",
        date=pl.date_ranges(
            pl.col("last_date") + pl.duration(days=1), pl.col("first") - pl.duration(days=1)
        ),
    ).explode("date")
    return _finding(days.filter(on_calendar(pl.col("date"), market)), market, GAP, "WARN")


def stale_findings(market: str, stale: pl.DataFrame, through: date) -> pl.DataFrame:
    """A stale symbol (`symbol`, `newest`: its newest bar, null when it has none) lacks every
    day of the market's calendar after its newest bar through the run's day (only that day when
    it has none, the run's last trading day): the fresh check failed (ERROR) on each of them."""
    last = pl.lit(through)
    first = pl.coalesce(
        pl.col("newest") + pl.duration(days=1), pl.lit(last_trading_day(market, through))
    )
    days = stale.select("symbol", date=pl.date_ranges(first, last)).explode("date")
    lacked = days.filter(on_calendar(pl.col("date"), market) & pl.col("date").is_not_null())
    return _finding(lacked, market, FRESH, "ERROR")


def move_findings(market: str, moves: pl.DataFrame) -> pl.DataFrame:
    """Each unexplained move (`moves`: symbol, date) warns on its day."""
    return _finding(moves, market, MOVES, "WARN")


def dividend_findings(market: str, unpriced: pl.DataFrame) -> pl.DataFrame:
    """Each dividend that could not be priced (`unpriced`: symbol, date) warns on its ex-date."""
    return _finding(unpriced, market, UNPRICED, "WARN")


def last_trading_day(market: str, day: date) -> date:
    """`day`, or the last day of the market's calendar before it."""
    while not trades_on(market, day):
        day -= timedelta(days=1)
    return day


def carried_findings(
    old: pl.DataFrame, written: pl.DataFrame, removed: Sequence[str]
) -> pl.DataFrame:
    """The findings of earlier runs that still hold: not those found afresh each run (`AFRESH`),
    not a removed symbol's, and not on a day a written symbol's bars were written again
    (`written`: symbol, first)."""
    kept = old.filter(~pl.col("check").is_in(AFRESH) & ~pl.col("symbol").is_in(list(removed)))
    rewritten = kept.join(written.select("symbol", "first"), on="symbol", how="left")
    return rewritten.filter(pl.col("first").is_null() | (pl.col("date") < pl.col("first"))).select(
        PRICE_FINDINGS.column_names
    )


def findings(carried: pl.DataFrame, *found: pl.DataFrame) -> pl.DataFrame:
    """Carried and new findings as the table stores them: one row per key, sorted."""
    rows = pl.concat([carried, *found], how="vertical_relaxed")
    return PRICE_FINDINGS.conform(rows.unique(PRICE_FINDINGS.key)).sort(PRICE_FINDINGS.key[1:])


def price_days(
    market: str, bars: pl.DataFrame, findings: pl.DataFrame, through: date
) -> pl.DataFrame:
    """`price_days` of one market: every calendar day from its first stored bar through the run's
    day (and any later day holding bars), its bars (`bars`: date, bars) and failed checks."""
    if bars.is_empty():
        return PRICE_DAYS.empty()
    first, newest = bars["date"].min(), bars["date"].max()
    assert isinstance(first, date)
    assert isinstance(newest, date)
    calendar = pl.DataFrame({"date": pl.date_range(first, max(newest, through), eager=True)})
    calendar = calendar.filter(on_calendar(pl.col("date"), market))
    days = pl.concat([calendar, bars.select("date")]).unique()
    failed = findings.group_by("date").agg(
        warnings=pl.col("check").filter(pl.col("severity") == "WARN").unique().sort(),
        errors=pl.col("check").filter(pl.col("severity") == "ERROR").unique().sort(),
    )
    rows = (
        days.join(bars, on="date", how="left")
        .join(failed, on="date", how="left")
        .with_columns(
            market=pl.lit(market),
            bars=pl.col("bars").fill_null(0),
            warnings=pl.col("warnings").fill_null([]),
            errors=pl.col("errors").fill_null([]),
        )
    )
    return PRICE_DAYS.conform(rows).sort("date")
