"""Daily sentiment counts and the legacy topic series on a hand-checkable set of briefs."""

from __future__ import annotations

from datetime import date

import polars as pl
import pytest

from pipelines.catalog.newsroom import BRIEFS, SENTIMENT_DAILY, SENTIMENT_TOPICS
from pipelines.newsroom import checks
from pipelines.newsroom.sentiment import sentiment_daily, sentiment_topics
from pipelines.newsroom.topics import topic_of

DAY1, DAY2 = date(2025, 1, 9), date(2025, 1, 10)
DAY2_MS = 1_736_467_200_000
"""2025-01-10 00:00 UTC in ms."""


def brief(
    article_id: str, day: date, symbols: list[str], sentiment: float | None, topic: str
) -> dict[str, object]:
    return {
        "market": "crypto",
        "article_id": article_id,
        "timestamp": 0,
        "date": day,
        "title": "t",
        "symbols": symbols,
        "body": "b",
        "fud_fomo_bias": None,
        "fud_fomo_score": None,
        "sentiment": sentiment,
        "tone": None,
        "clout": None,
        "impacted_coins": None,
        "speculation_score": None,
        "topic": topic,
        "enricher": "lexicon",
        "feed": "f",
        "link": None,
    }


@pytest.fixture
def briefs() -> pl.DataFrame:
    rows = [
        brief("a", DAY2, ["BTC", "ETH"], 1.0, "price"),  # BTC +, ETH +   (exactly 1 is positive)
        brief("b", DAY2, ["BTC"], -1.0, "security"),  # BTC -            (exactly -1 is negative)
        brief("c", DAY2, ["BTC"], 0.99, "security"),  # BTC neutral
        brief("d", DAY2, ["BTC"], None, "regulation"),  # BTC neutral (no score)
        brief("e", DAY1, ["BTC"], -4.5, "price"),  # BTC - on day 1
        brief("f", DAY1, [], 3.0, "price"),  # names nothing: counted nowhere
    ]
    return pl.DataFrame(rows, schema=BRIEFS.schema)


def test_buckets_per_symbol_and_day_newest_first(briefs: pl.DataFrame) -> None:
    daily = sentiment_daily(briefs)
    assert daily.schema == SENTIMENT_DAILY.schema
    got = daily.select("symbol", "date", "positive", "neutral", "negative", "total").rows()
    assert got == [
        ("BTC", DAY2, 1, 2, 1, 4),
        ("BTC", DAY1, 0, 0, 1, 1),
        ("ETH", DAY2, 1, 0, 0, 1),
    ]


def test_timestamp_is_midnight_utc_of_the_day_in_ms(briefs: pl.DataFrame) -> None:
    daily = sentiment_daily(briefs)
    assert daily.filter(pl.col("date") == DAY2)["timestamp"].unique().to_list() == [DAY2_MS]


def test_total_is_the_sum_and_one_row_per_symbol_day(briefs: pl.DataFrame) -> None:
    daily = sentiment_daily(briefs)
    assert checks.total_not_sum(daily).is_empty()
    assert checks.duplicate_keys(daily, ["symbol", "date"]).is_empty()


def test_a_brief_naming_a_symbol_twice_counts_once() -> None:
    rows = [brief("a", DAY2, ["BTC", "BTC"], 2.0, "price")]
    daily = sentiment_daily(pl.DataFrame(rows, schema=BRIEFS.schema))
    assert daily.select("positive", "total").rows() == [(1, 1)]


def test_no_briefs_give_empty_tables() -> None:
    assert sentiment_daily(BRIEFS.empty()).is_empty()
    assert sentiment_topics(BRIEFS.empty()).schema == SENTIMENT_TOPICS.schema


def test_legacy_topic_is_the_days_most_frequent_and_ties_go_by_priority(
    briefs: pl.DataFrame,
) -> None:
    topics = sentiment_topics(briefs)
    assert topics.schema == SENTIMENT_TOPICS.schema
    got = topics.select("symbol", "date", "topic", "positive", "negative").rows()
    assert got == [
        ("BTC", DAY2, "security", 1, 1),  # security 2 briefs, price 1, regulation 1
        ("BTC", DAY1, "price", 0, 1),
        ("ETH", DAY2, "price", 1, 0),
    ]


def test_topic_ties_prefer_security_over_price() -> None:
    rows = [brief("a", DAY2, ["BTC"], 2.0, "price"), brief("b", DAY2, ["BTC"], -2.0, "security")]
    topics = sentiment_topics(pl.DataFrame(rows, schema=BRIEFS.schema))
    assert topics["topic"].to_list() == ["security"]


@pytest.mark.parametrize(
    ("title", "topic"),
    [
        ("Exchange hacked, $100 million stolen", "security"),
        ("SEC sues exchange over unregistered securities", "regulation"),
        ("Apple beats estimates as revenue climbs", "earnings"),
        ("Dollar slips after Fed holds rates", "macro"),
        ("Oil rises after OPEC cuts output", "supply"),
        ("Payments giant announces partnership with Solana", "adoption"),
        ("Bitcoin climbs 3%", "price"),
    ],
)
def test_topic_of_a_brief_by_keywords(title: str, topic: str) -> None:
    assert topic_of(title, "") == topic
