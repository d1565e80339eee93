"""Daily sentiment counts per symbol, and the legacy series of each day's topic, from briefs."""

from __future__ import annotations

import polars as pl

from pipelines.catalog.newsroom import SENTIMENT_DAILY, SENTIMENT_TOPICS
from pipelines.newsroom.lexicon import TOPIC_NAMES

POSITIVE_FROM = 1.0
"""A brief is positive when its sentiment >= 1 and negative when <= -1 (decisions.md)."""

_DAY_MS = 86_400_000


def bucket(sentiment: pl.Expr) -> pl.Expr:
    """'positive', 'negative' or 'neutral' (a null sentiment is neutral)."""
    return (
        pl.when(sentiment >= POSITIVE_FROM)
        .then(pl.lit("positive"))
        .when(sentiment <= -POSITIVE_FROM)
        .then(pl.lit("negative"))
        .otherwise(pl.lit("neutral"))
    )


def mentions(briefs: pl.DataFrame) -> pl.DataFrame:
    """One row per (brief, symbol named) with the brief's day, bucket and topic."""
    return (
        briefs.select("market", "article_id", "date", "symbols", "sentiment", "topic")
        .explode("symbols")
        .drop_nulls("symbols")
        .rename({"symbols": "symbol"})
        .unique(["article_id", "symbol"])
        .with_columns(bucket(pl.col("sentiment")).alias("bucket"))
    )


def _day_ms(date: pl.Expr) -> pl.Expr:
    return date.cast(pl.Int64) * _DAY_MS


def sentiment_daily(briefs: pl.DataFrame) -> pl.DataFrame:
    """Counts per (symbol, day) with news, newest day first."""
    rows = mentions(briefs)
    counts = rows.group_by("market", "symbol", "date").agg(
        (pl.col("bucket") == name).sum().cast(pl.Int64).alias(name)
        for name in ("positive", "neutral", "negative")
    )
    frame = counts.with_columns(
        _day_ms(pl.col("date")).alias("timestamp"),
        (pl.col("positive") + pl.col("neutral") + pl.col("negative")).alias("total"),
    ).sort(["symbol", "date"], descending=[False, True])
    return SENTIMENT_DAILY.conform(frame)


def sentiment_topics(briefs: pl.DataFrame) -> pl.DataFrame:
    """Per (symbol, day) with news: the day's most frequent topic and its positive/negative counts.

    Ties between topics go to the first in `TOPIC_NAMES` (security, regulation, earnings, ...).
    """
    rows = mentions(briefs).with_columns(
        pl.col("topic")
        .replace_strict(
            {name: rank for rank, name in enumerate(TOPIC_NAMES)}, default=len(TOPIC_NAMES)
        )
        .alias("rank")
    )
    per_topic = (
        rows.group_by("market", "symbol", "date", "topic", "rank")
        .len()
        .sort(["len", "rank"], descending=[True, False])
        .group_by("market", "symbol", "date", maintain_order=True)
        .first()
        .select("market", "symbol", "date", "topic")
    )
    counts = rows.group_by("market", "symbol", "date").agg(
        (pl.col("bucket") == "positive").sum().cast(pl.Int64).alias("positive"),
        (pl.col("bucket") == "negative").sum().cast(pl.Int64).alias("negative"),
    )
    frame = (
        counts.join(per_topic, on=["market", "symbol", "date"], how="left")
        .with_columns(_day_ms(pl.col("date")).alias("timestamp"))
        .sort(["symbol", "date"], descending=[False, True])
    )
    return SENTIMENT_TOPICS.conform(frame)
