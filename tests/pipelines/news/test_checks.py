"""Each data-quality rule of raw news, on hand-made frames."""

from __future__ import annotations

from datetime import UTC, datetime

import polars as pl

from pipelines.catalog import NEWS_REJECTS, RAW_NEWS
from pipelines.news import checks

T = datetime(2025, 1, 9, 12, tzinfo=UTC)


def articles(*rows: tuple[str, str]) -> pl.DataFrame:
    """Articles from (article_id, body) pairs, all published at T."""
    frame = pl.DataFrame(
        {
            "market": "crypto",
            "article_id": [r[0] for r in rows],
            "feed": "f",
            "guid": None,
            "link": "https://x.example/",
            "title": None,
            "body": [r[1] for r in rows],
            "published_at": T,
            "timestamp": int(T.timestamp() * 1000),
        }
    )
    return RAW_NEWS.conform(frame)


def rejects(*reasons: str) -> pl.DataFrame:
    rows = [
        {"market": "crypto", "source": "s", "location": f"item {i}", "record": "", "reason": r}
        for i, r in enumerate(reasons)
    ]
    return NEWS_REJECTS.conform(pl.DataFrame(rows, schema=NEWS_REJECTS.schema))


def test_article_id_unique_fails_with_the_repeated_ids() -> None:
    outcome = checks.article_id_unique(articles(("a", "x"), ("b", "x"), ("a", "y")))
    assert not outcome.passed
    assert outcome.metadata["offending"] == [{"article_id": "a", "len": "2"}]
    assert checks.article_id_unique(articles(("a", "x"), ("b", "x"))).passed


def test_articles_complete_fails_on_a_blank_body() -> None:
    outcome = checks.articles_complete(articles(("a", "text"), ("b", "  ")))
    assert not outcome.passed
    assert [r["article_id"] for r in outcome.metadata["offending"]] == ["b"]
    assert checks.articles_complete(articles(("a", "text"))).passed


def test_fresh_passes_within_the_limit_and_fails_beyond_it_or_without_articles() -> None:
    assert checks.fresh(T, datetime(2025, 1, 10, 12, tzinfo=UTC), max_age_hours=24).passed
    stale = checks.fresh(T, datetime(2025, 1, 10, 13, tzinfo=UTC), max_age_hours=24)
    assert not stale.passed
    assert stale.metadata["age_hours"] == 25.0
    assert not checks.fresh(None, T, max_age_hours=24).passed


def test_no_rejects_counts_reasons_by_category() -> None:
    outcome = checks.no_rejects(
        rejects(
            "missing date: none",
            "no guid and no link: x | missing date: none",
            "empty document: 0 bytes",
        )
    )
    assert not outcome.passed
    assert outcome.metadata["reasons"] == {
        "missing date": 2,
        "no guid and no link": 1,
        "empty document": 1,
    }
    assert outcome.metadata["rejects"] == 3
    assert checks.no_rejects(rejects()).passed


def test_reason_category_is_the_text_before_the_first_colon() -> None:
    assert (
        checks.reason_category("not well-formed XML: <unknown>:14:44: no element found")
        == "not well-formed XML"
    )
