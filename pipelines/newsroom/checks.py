"""Data-quality rules of the newsroom tables as pure functions: each returns the offending rows."""

from __future__ import annotations

import polars as pl

from pipelines.newsroom.enrichment import MAX_SCORE

SENTIMENT_BOUND = 5.0
ALLOWED: dict[str, frozenset[str]] = {
    "tone": frozenset({"bullish", "bearish", "neutral"}),
    "fud_fomo_bias": frozenset({"fud", "fomo", "neutral"}),
    "clout": frozenset({"high", "medium", "low"}),
    "fud_fomo_score": frozenset(str(n) for n in range(MAX_SCORE + 1)),
    "speculation_score": frozenset(str(n) for n in range(MAX_SCORE + 1)),
}
"""The values each enrichment field may take (null is always allowed)."""


def non_finite_sentiment(briefs: pl.DataFrame) -> pl.DataFrame:
    """Briefs whose sentiment is NaN or infinite."""
    score = pl.col("sentiment")
    return briefs.filter(score.is_not_null() & ~score.is_finite()).select("article_id", "sentiment")


def sentiment_out_of_range(briefs: pl.DataFrame) -> pl.DataFrame:
    """Briefs whose finite sentiment lies outside -5..+5."""
    score = pl.col("sentiment")
    outside = score.is_finite() & ((score < -SENTIMENT_BOUND) | (score > SENTIMENT_BOUND))
    return briefs.filter(outside).select("article_id", "sentiment")


def unknown_symbols(briefs: pl.DataFrame, instruments: pl.DataFrame) -> pl.DataFrame:
    """(article_id, symbol) pairs naming a symbol that is not an instrument of the brief's market."""
    named = briefs.select("market", "article_id", "symbols").explode("symbols").drop_nulls()
    known = instruments.select("market", pl.col("symbol").alias("symbols"))
    return named.join(known, on=["market", "symbols"], how="anti").rename({"symbols": "symbol"})


def disallowed_values(briefs: pl.DataFrame) -> pl.DataFrame:
    """(article_id, field, value) for every enrichment value outside its documented set."""
    parts = [
        briefs.filter(pl.col(field).is_not_null() & ~pl.col(field).is_in(sorted(values))).select(
            "article_id", pl.lit(field).alias("field"), pl.col(field).alias("value")
        )
        for field, values in ALLOWED.items()
    ]
    return pl.concat(parts)


def duplicate_keys(frame: pl.DataFrame, key: list[str]) -> pl.DataFrame:
    """Key values held by more than one row, with their count."""
    return frame.group_by(key).len().filter(pl.col("len") > 1).sort(key)


def total_not_sum(daily: pl.DataFrame) -> pl.DataFrame:
    """Rows whose total differs from positive + neutral + negative."""
    parts = pl.col("positive") + pl.col("neutral") + pl.col("negative")
    return daily.filter(pl.col("total") != parts)
