"""Properties of the trend tables, each returning the offending rows (empty = the property holds)."""

from __future__ import annotations

import polars as pl

from pipelines.catalog.trends import STRENGTH_LABELS, TREND_LABELS


def non_finite(frame: pl.DataFrame) -> pl.DataFrame:
    """Rows with NaN or infinity in any float column."""
    floats = [name for name, dtype in frame.schema.items() if dtype == pl.Float64]
    return frame.filter(pl.any_horizontal(~pl.col(c).is_finite() for c in floats).fill_null(False))


def bad_labels(history: pl.DataFrame) -> pl.DataFrame:
    """Rows whose trend or strength is not an allowed label."""
    return history.filter(
        ~pl.col("trend").is_in(TREND_LABELS) | ~pl.col("strength").is_in(STRENGTH_LABELS)
    )


def discontiguous(segments: pl.DataFrame) -> pl.DataFrame:
    """Segments that do not start on the bar where the previous one ended, or are misnumbered."""
    ordered = segments.sort("symbol", "segment")
    previous_end = pl.col("ended_at").shift(1).over("symbol")
    previous_number = pl.col("segment").shift(1).over("symbol")
    return ordered.filter(
        ((pl.col("segment") == 0) & previous_number.is_not_null())
        | ((pl.col("segment") > 0) & (pl.col("started_at") != previous_end))
        | ((pl.col("segment") > 0) & (pl.col("segment") != previous_number + 1))
        | (pl.col("ended_at") < pl.col("started_at"))
    ).select("symbol", "segment", "started_at", "ended_at")


def running_not_once(segments: pl.DataFrame) -> pl.DataFrame:
    """Symbols without exactly one running segment, or whose running one is not the newest."""
    per_symbol = segments.group_by("symbol").agg(
        pl.col("is_running").sum().alias("running"),
        pl.col("segment").filter(pl.col("is_running")).first().alias("running_segment"),
        pl.col("segment").max().alias("newest"),
    )
    return per_symbol.filter(
        (pl.col("running") != 1) | (pl.col("running_segment") != pl.col("newest"))
    )


def wrong_durations(segments: pl.DataFrame) -> pl.DataFrame:
    """Segments whose duration is not the calendar days between start and end, or whose extremes
    or averages are inconsistent with their own prices."""
    days = (pl.col("ended_on") - pl.col("started_on")).dt.total_days()
    millis = (pl.col("ended_at") - pl.col("started_at")) // 86_400_000
    return segments.filter(
        (pl.col("trend_duration_days") != days)
        | (pl.col("trend_duration_days") != millis)
        | (pl.col("max_price_date") < pl.col("started_on"))
        | (pl.col("max_price_date") > pl.col("ended_on"))
        | (pl.col("min_price_date") < pl.col("started_on"))
        | (pl.col("min_price_date") > pl.col("ended_on"))
        | (pl.col("peak_gain") < 0.0)
        | (pl.col("peak_loss") > 0.0)
    ).select("symbol", "segment", "started_on", "ended_on", "trend_duration_days")
