"""decisions.md, Freshness: what each day of a market's news is found to be, from the checks."""

from __future__ import annotations

from datetime import UTC, date, datetime

import polars as pl

from pipelines.catalog import NEWS_DAYS
from pipelines.news import condition
from pipelines.news.condition import COMPLETE, FRESH, UNIQUE

TODAY = date(2026, 3, 2)


def published(*instants: datetime) -> pl.Series:
    return pl.Series("published_at", instants, dtype=pl.Datetime("ms", "UTC"))


def test_articles_are_counted_by_the_day_they_were_published() -> None:
    days = condition.news_days(
        "crypto",
        published(
            datetime(2026, 3, 1, 23, 59, tzinfo=UTC),
            datetime(2026, 3, 2, 0, 0, tzinfo=UTC),
            datetime(2026, 3, 2, 9, 0, tzinfo=UTC),
        ),
        NEWS_DAYS.empty(),
        [],
        TODAY,
        {},
    )
    assert days.rows() == [
        ("crypto", date(2026, 3, 1), 1, [], []),
        ("crypto", TODAY, 2, [], []),
    ]


def test_a_table_wide_check_fails_on_the_refresh_day_only_and_is_decided_afresh() -> None:
    earlier = NEWS_DAYS.conform(
        pl.DataFrame(
            {
                "market": ["crypto", "crypto"],
                "date": [date(2026, 2, 27), date(2026, 2, 28)],
                "articles": [1, 0],
                "warnings": [[FRESH], []],
                "errors": [[COMPLETE], [UNIQUE]],
            }
        )
    )
    days = condition.news_days(
        "crypto",
        published(datetime(2026, 2, 27, 8, tzinfo=UTC)),
        earlier,
        [date(2026, 3, 1)],
        TODAY,
        {FRESH: "WARN"},
    )
    # The 27th keeps its incomplete article, not its stale-news warning (a refresh then); the
    # 28th's duplicate ids were decided afresh and are gone; today's refresh found stale news.
    assert days.rows() == [
        ("crypto", date(2026, 2, 27), 1, [], [COMPLETE]),
        ("crypto", date(2026, 3, 1), 0, [], [COMPLETE]),
        ("crypto", TODAY, 0, [FRESH], []),
    ]
