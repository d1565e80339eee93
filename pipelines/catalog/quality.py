"""Per-day condition tables: what the pipeline's checks found on each day of each market.

The pipeline writes them with the data they describe (the same commit), and `GET
/api/v2/{market}/data-status` reads them (decisions.md, Freshness). Every row is a function of
the stored data and the run's day, never of the history of runs, so an incremental day writes
what a full run of that day writes.
"""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta

import polars as pl

from pipelines.catalog.schema import WEEKDAY_MARKETS, Column, Table

DUE_AFTER = timedelta(days=1, hours=2, minutes=30)
"""A market's day is due this long after it starts (00:00 UTC): every market's daily bar has
closed by midnight UTC, the daily run starts at 00:30 and must have committed by 02:30. The daily
schedule and its freshness check are derived from it (`pipelines.jobs.schedules`)."""

_CHECKS = pl.List(pl.String())

PRICE_DAYS = Table(
    name="price_days",
    description=(
        "One row per day of the market's calendar, from its first stored bar through the run's "
        "day: the bars stored for it and the checks of the daily prices that failed on it."
    ),
    columns=(
        Column("market", pl.String(), "market"),
        Column("date", pl.Date(), "the day (UTC)"),
        Column("bars", pl.Int64(), "bars stored for the day, over every symbol (0: absent)"),
        Column("warnings", _CHECKS, "`asset.check` names of the WARN checks that failed on it"),
        Column("errors", _CHECKS, "`asset.check` names of the ERROR checks that failed on it"),
    ),
    key=("market", "date"),
)

NEWS_DAYS = Table(
    name="news_days",
    description=(
        "One row per day with stored articles or a failed news check: the articles published on "
        "it and the checks of the news that failed on it."
    ),
    columns=(
        Column("market", pl.String(), "market whose feeds carried the articles"),
        Column("date", pl.Date(), "the day (UTC)"),
        Column("articles", pl.Int64(), "stored articles published on the day"),
        Column("warnings", _CHECKS, "`asset.check` names of the WARN checks that failed on it"),
        Column("errors", _CHECKS, "`asset.check` names of the ERROR checks that failed on it"),
    ),
    key=("market", "date"),
)

TABLES: tuple[Table, ...] = (PRICE_DAYS, NEWS_DAYS)


def check_name(asset: str, check: str) -> str:
    """How a day names a failed check: its asset and its name, as Dagster's UI shows them."""
    return f"{asset}.{check}"


def trades_on(market: str, day: date) -> bool:
    """Whether `day` is in the market's calendar: every day for crypto, Monday to Friday otherwise
    (no holiday calendar: a weekday holiday with no bars is absent)."""
    return market not in WEEKDAY_MARKETS or day.isoweekday() <= 5


def on_calendar(days: pl.Expr, market: str) -> pl.Expr:
    """`trades_on` as a Polars expression over a column of days."""
    return days.dt.weekday() <= 5 if market in WEEKDAY_MARKETS else pl.lit(True)


def market_days(market: str, first: date, last: date) -> list[date]:
    """The days of the market's calendar from `first` through `last`, oldest first."""
    count = (last - first).days + 1
    days = (first + timedelta(days=n) for n in range(max(count, 0)))
    return [d for d in days if trades_on(market, d)]


def last_due_day(now: datetime) -> date:
    """The newest day that is due at `now` (an aware instant)."""
    return (now.astimezone(UTC) - DUE_AFTER).date()


def day_status(due: bool, bars: int, warnings: list[str], errors: list[str]) -> str:
    """The rule of decisions.md, Freshness: an ERROR check failed, or absent though due: missing;
    absent and not due: pending; a WARN check failed: degraded; otherwise available."""
    if errors or (bars == 0 and due):
        return "missing"
    if bars == 0:
        return "pending"
    return "degraded" if warnings else "available"
