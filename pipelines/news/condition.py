"""Each day's condition from the news checks: `news_days`, one market at a time.

The articles of a day are counted from every stored article. A check about the stored table as
it is now (the newest article's age, unique ids) fails on the refresh's day only and is decided
afresh by every refresh; a check about single articles (complete) fails on the day each offending
article was published, and stays. Rejected items are not given a day (an unreadable item may have
no readable date): `news_rejects` keeps them. So what a refresh writes is what one refresh of
the same stored articles at the same instant writes, however many came before.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import date

import polars as pl

from pipelines.catalog import NEWS_DAYS, RAW_NEWS
from pipelines.catalog.quality import check_name

COMPLETE = check_name(RAW_NEWS.name, "articles_complete")
FRESH = check_name(RAW_NEWS.name, "fresh")
UNIQUE = check_name(RAW_NEWS.name, "article_id_unique")
STAYING = frozenset({COMPLETE})
"""The checks about single articles: their failures are carried from refresh to refresh."""


def news_days(
    market: str,
    published: pl.Series,
    old: pl.DataFrame,
    incomplete: Iterable[date],
    today: date,
    failed_today: dict[str, str],
) -> pl.DataFrame:
    """The market's `news_days`: `published` is every stored article's instant, `old` the table
    before the refresh, `incomplete` the days of this refresh's incomplete articles, and
    `failed_today` the table-wide checks that failed at the refresh (name -> WARN or ERROR)."""
    articles = (
        pl.DataFrame({"date": published.dt.date()})
        .drop_nulls()
        .group_by("date")
        .agg(articles=pl.len())
    )
    found = [
        *_carried(old),
        *((day, COMPLETE, "ERROR") for day in incomplete),
        *((today, check, severity) for check, severity in failed_today.items()),
    ]
    failed = (
        pl.DataFrame(
            found,
            schema={"date": pl.Date(), "check": pl.String(), "severity": pl.String()},
            orient="row",
        )
        .group_by("date")
        .agg(
            warnings=pl.col("check").filter(pl.col("severity") == "WARN").unique().sort(),
            errors=pl.col("check").filter(pl.col("severity") == "ERROR").unique().sort(),
        )
    )
    rows = articles.join(failed, on="date", how="full", coalesce=True).with_columns(
        market=pl.lit(market),
        articles=pl.col("articles").fill_null(0),
        warnings=pl.col("warnings").fill_null([]),
        errors=pl.col("errors").fill_null([]),
    )
    return NEWS_DAYS.conform(rows).sort("date")


def _carried(old: pl.DataFrame) -> list[tuple[date, str, str]]:
    """The failures of checks about single articles in the table before the refresh."""
    out: list[tuple[date, str, str]] = []
    for row in old.select("date", "warnings", "errors").iter_rows():
        day, warnings, errors = row
        out += [(day, c, "WARN") for c in warnings if c in STAYING]
        out += [(day, c, "ERROR") for c in errors if c in STAYING]
    return out
