"""Analytics tables of the trends domain: the daily trend label and the trend segments (episodes)."""

from __future__ import annotations

import polars as pl

from pipelines.catalog.schema import Column, Table

TREND_LABELS: tuple[str, ...] = ("up", "down", "neutral")
"""Every value of a `trend` column."""

STRENGTH_LABELS: tuple[str, ...] = ("weak", "moderate", "strong")
"""Every value of a `strength` column, from |signal| (docs/trends.md)."""

TREND_HISTORY = Table(
    name="trend_history",
    description=(
        "Daily trend of every symbol: direction with hysteresis and confirmation, a strength label "
        "and the signal behind them (docs/trends.md)."
    ),
    columns=(
        Column("market", pl.String(), "market of the instrument"),
        Column("symbol", pl.String(), "canonical upper-case symbol"),
        Column("date", pl.Date(), "the bar's day (UTC)"),
        Column("timestamp", pl.Int64(), "midnight UTC of `date`, unix epoch milliseconds"),
        Column("price", pl.Float64(), "closing price of the day"),
        Column("trend", pl.String(), "direction: up, down or neutral"),
        Column("strength", pl.String(), "weak, moderate or strong, from |signal|"),
        Column(
            "signal", pl.Float64(), "(short - mid average) / ATR: the trend signal in ATR units"
        ),
        Column("short_term_average", pl.Float64(), "20-bar SMA of close (fewer bars at the start)"),
        Column("mid_term_average", pl.Float64(), "50-bar SMA of close (fewer bars at the start)"),
        Column("long_term_average", pl.Float64(), "200-bar SMA of close (fewer bars at the start)"),
        Column("segment", pl.Int64(), "the trend segment the day is labelled with, 0 = oldest"),
    ),
    key=("market", "symbol", "date"),
)


def _extreme(prefix: str, which: str) -> tuple[Column, ...]:
    return (
        Column(f"{prefix}_close", pl.Float64(), f"close of the {which}-closing day of the segment"),
        Column(f"{prefix}_timestamp", pl.Int64(), "that day, midnight UTC in ms"),
        Column(f"{prefix}_date", pl.Date(), "that day (UTC)"),
        Column(f"{prefix}_trend", pl.String(), "the trend label of that day in trend_history"),
    )


TREND_SEGMENTS = Table(
    name="trend_segments",
    description=(
        "Trend episodes per symbol: consecutive days of one trend, each starting on the bar where "
        "the previous ended; the newest (is_running) runs to the latest bar (docs/trends.md)."
    ),
    columns=(
        Column("market", pl.String(), "market of the instrument"),
        Column("symbol", pl.String(), "canonical upper-case symbol"),
        Column("segment", pl.Int64(), "0 = oldest, consecutive per symbol"),
        Column("is_running", pl.Boolean(), "true for the newest segment: the current trend"),
        Column("trend", pl.String(), "direction: up, down or neutral"),
        Column(
            "started_at", pl.Int64(), "start bar, midnight UTC in ms (= previous segment's end)"
        ),
        Column("started_on", pl.Date(), "start bar's day (ISO 8601 date)"),
        Column(
            "ended_at", pl.Int64(), "end bar (the next segment's start; latest bar if running), ms"
        ),
        Column("ended_on", pl.Date(), "end bar's day"),
        Column("close", pl.Float64(), "close of the end bar (latest bar for the running segment)"),
        Column("start_close", pl.Float64(), "close of the start bar"),
        Column(
            "peak_gain",
            pl.Float64(),
            "max % change of close above start_close in the segment, >= 0",
        ),
        Column(
            "peak_loss", pl.Float64(), "min % change of close vs start_close in the segment, <= 0"
        ),
        Column("long_term_average", pl.Float64(), "200-bar SMA of close on the end bar"),
        Column("mid_term_average", pl.Float64(), "50-bar SMA of close on the end bar"),
        Column("short_term_average", pl.Float64(), "20-bar SMA of close on the end bar"),
        Column("max_price", pl.Float64(), "highest close in the segment (both end bars included)"),
        Column("min_price", pl.Float64(), "lowest close in the segment (both end bars included)"),
        *_extreme("max_price", "highest"),
        *_extreme("min_price", "lowest"),
        Column("signal_strength", pl.Float64(), "mean signal over the segment's bars; raw, signed"),
        Column("trend_duration_days", pl.Int64(), "calendar days from start bar to end bar"),
        Column("bars", pl.Int64(), "bars in the segment, both end bars included"),
        Column(
            "last_updated", pl.Int64(), "when the run that last updated the symbol's trends ran, ms"
        ),
    ),
    key=("market", "symbol", "segment"),
)

TABLES: tuple[Table, ...] = (TREND_HISTORY, TREND_SEGMENTS)
