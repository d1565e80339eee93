"""Data-quality rules of raw news as pure functions over frames; each tests one property."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

import polars as pl

from pipelines.news.model import REASON_SEPARATOR

OFFENDING_ROWS_SHOWN = 20
"""Offending rows a check carries in its metadata (the count is always complete)."""


@dataclass(frozen=True)
class Outcome:
    """A check's verdict and the metadata that explains it."""

    passed: bool
    metadata: dict[str, Any] = field(default_factory=dict)


def _rows(frame: pl.DataFrame) -> list[dict[str, Any]]:
    # As strings: metadata is JSON, and the rows may hold instants.
    return frame.head(OFFENDING_ROWS_SHOWN).select(pl.all().cast(pl.String)).to_dicts()


def article_id_unique(articles: pl.DataFrame) -> Outcome:
    """No two rows of raw_news share an article_id."""
    repeated = articles.group_by("article_id").len().filter(pl.col("len") > 1).sort("article_id")
    return Outcome(
        passed=repeated.is_empty(),
        metadata={"repeated_ids": repeated.height, "offending": _rows(repeated)},
    )


def incomplete_articles(articles: pl.DataFrame) -> pl.DataFrame:
    """The articles without a publication instant or with an empty body."""
    return articles.filter(
        pl.col("published_at").is_null()
        | pl.col("timestamp").is_null()
        | pl.col("body").is_null()
        | (pl.col("body").str.strip_chars() == "")
    ).select("article_id", "feed", "published_at", "body")


def articles_complete(articles: pl.DataFrame) -> Outcome:
    """Every article has a publication instant and a non-empty body."""
    incomplete = incomplete_articles(articles)
    return Outcome(
        passed=incomplete.is_empty(),
        metadata={"incomplete": incomplete.height, "offending": _rows(incomplete)},
    )


def fresh(newest: datetime | None, now: datetime, max_age_hours: float) -> Outcome:
    """The newest article is at most `max_age_hours` old at `now`."""
    limit = timedelta(hours=max_age_hours)
    age = None if newest is None else now - newest
    metadata: dict[str, Any] = {
        "newest": newest.isoformat() if newest else None,
        "now": now.isoformat(),
        "max_age_hours": max_age_hours,
        "age_hours": None if age is None else round(age.total_seconds() / 3600, 2),
    }
    return Outcome(passed=age is not None and age <= limit, metadata=metadata)


def not_expected() -> Outcome:
    """The freshness of a market its source has no feed for: nothing is late."""
    return Outcome(passed=True, metadata={"feeds": "none: the source carries no news for it"})


def reason_category(reason: str) -> str:
    """The part of a reason before its detail: `unparseable date: published 'x'` -> `unparseable date`."""
    return reason.split(":", 1)[0].strip()


def no_rejects(rejects: pl.DataFrame) -> Outcome:
    """No feed or item was rejected; otherwise the reasons by count and the first rejects."""
    categories = Counter(
        reason_category(part)
        for reason in rejects.get_column("reason").to_list()
        for part in reason.split(REASON_SEPARATOR)
        if part
    )
    return Outcome(
        passed=rejects.is_empty(),
        metadata={
            "rejects": rejects.height,
            "reasons": dict(categories.most_common()),
            "offending": _rows(rejects.select("source", "location", "reason")),
        },
    )
