"""Trend tables from daily bars: `trend_history` (one row per bar) and `trend_segments` (episodes)."""

from __future__ import annotations

import numpy as np
import polars as pl
from numpy.typing import NDArray

from pipelines.indicators.panel import Panels, to_panels
from pipelines.trends import method
from pipelines.warehouse.tables import sorted_by


def _ints(p: Panels, panel: NDArray[np.integer]) -> NDArray[np.int64]:
    return p.to_long(panel.astype(np.float64)).astype(np.int64)


TREND_NAMES = tuple(method.LABELS[state] for state in (method.DOWN, method.NEUTRAL, method.UP))
"""Trend names by label + 1 (down, neutral, up)."""


def named(codes: NDArray[np.integer], names: tuple[str, ...]) -> pl.Series:
    """`names[code]` of every code as a String series. Mapped in Polars: a numpy array of strings
    becomes a Series one Python object at a time, several times slower on a first load."""
    return pl.Series(codes).replace_strict(dict(enumerate(names)), return_dtype=pl.String)


def trend_history(bars: pl.DataFrame) -> pl.DataFrame:
    """Every bar of every symbol with its trend: bars' market, symbol, date, timestamp, then
    price, trend, strength, signal, the three averages and the segment number.

    `bars` are daily OHLCV rows (DAILY_PRICES columns) of one market sorted by symbol then date.
    """
    return trend_history_with_machines(bars)[0]


def trend_history_with_machines(bars: pl.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame]:
    """`trend_history`, and each symbol's labelling state after its last bar (`symbol`,
    `machine_state`, `machine_pending`, `machine_run`) for a later run to carry on from."""
    p = to_panels(bars, ("symbol",))
    s = method.signals(p.high, p.low, p.close)
    labels, machine = method.label_with_machines(s.signal, p.lengths)
    machines = p.keys.select("symbol").with_columns(
        machine_state=pl.Series(machine[:, 0]),
        machine_pending=pl.Series(machine[:, 1]),
        machine_run=pl.Series(machine[:, 2]),
    )
    segments = method.segment_ids(labels, p.lengths)
    signal = p.to_long(s.signal)
    history = bars.select("market", "symbol", "date", "timestamp", pl.col("close").alias("price"))
    history = history.with_columns(
        trend=named(_ints(p, labels) + 1, TREND_NAMES),
        strength=named(method.strength(signal), method.STRENGTHS),
        signal=pl.Series(signal),
        short_term_average=pl.Series(p.to_long(s.short)),
        mid_term_average=pl.Series(p.to_long(s.mid)),
        long_term_average=pl.Series(p.to_long(s.long)),
        segment=pl.Series(_ints(p, segments)),
    )
    return history, machines


def _with_end_bars(history: pl.DataFrame) -> pl.DataFrame:
    """The history plus, for every segment after the first, its start bar again as the previous
    segment's last row (a segment ends on the bar where the next one starts), ordered by symbol,
    segment and date, with `_run` numbering the (market, symbol, segment) groups in that order.

    The rows are sorted by symbol and date, so each start bar goes just before itself: no sort by
    the symbols' strings (it took a fifth of a first load's trend work)."""
    history = sorted_by(history, ["symbol", "date"])
    market, symbol, segment = pl.col("market"), pl.col("symbol"), pl.col("segment")
    same_symbol = ((market == market.shift(1)) & (symbol == symbol.shift(1))).fill_null(False)
    flags = history.select(
        same_symbol.alias("same"),
        (same_symbol & (segment != segment.shift(1)) & (segment > 0)).alias("start"),
    )
    starts = flags["start"].to_numpy()
    rows = np.repeat(np.arange(history.height), 1 + starts.astype(np.int64))
    copies = np.flatnonzero(starts)
    segments = history["segment"].to_numpy()[rows]
    segments[copies + np.arange(len(copies))] -= 1
    new_run = np.ones(len(rows), dtype=bool)
    new_run[1:] = ~flags["same"].to_numpy()[rows][1:] | (segments[1:] != segments[:-1])
    return history[rows].with_columns(
        segment=pl.Series(segments), _run=pl.Series(np.cumsum(new_run) - 1)
    )


def _extreme(prefix: str, position: pl.Expr) -> list[pl.Expr]:
    return [
        pl.col("price").get(position).alias(f"{prefix}_close"),
        pl.col("timestamp").get(position).alias(f"{prefix}_timestamp"),
        pl.col("date").get(position).alias(f"{prefix}_date"),
        pl.col("trend").get(position).alias(f"{prefix}_trend"),
    ]


def trend_segments(history: pl.DataFrame, last_updated: int) -> pl.DataFrame:
    """One row per segment of each symbol (TREND_SEGMENTS columns) from `trend_history` rows."""
    price, start = pl.col("price"), pl.col("price").first()
    segments = (
        _with_end_bars(history)
        .group_by("_run", maintain_order=True)
        .agg(
            pl.col("market").first(),
            pl.col("symbol").first(),
            pl.col("segment").first(),
            pl.col("trend").first(),
            pl.col("timestamp").first().alias("started_at"),
            pl.col("date").first().alias("started_on"),
            pl.col("timestamp").last().alias("ended_at"),
            pl.col("date").last().alias("ended_on"),
            price.last().alias("close"),
            start.alias("start_close"),
            ((price.max() / start - 1.0) * 100.0).alias("peak_gain"),
            ((price.min() / start - 1.0) * 100.0).alias("peak_loss"),
            pl.col("long_term_average").last(),
            pl.col("mid_term_average").last(),
            pl.col("short_term_average").last(),
            price.max().alias("max_price"),
            price.min().alias("min_price"),
            *_extreme("max_price", price.arg_max()),
            *_extreme("min_price", price.arg_min()),
            pl.col("signal").mean().alias("signal_strength"),
            pl.len().alias("bars"),
        )
        .drop("_run")
    )
    return segments.with_columns(
        is_running=pl.col("segment") == pl.col("segment").max().over("symbol"),
        trend_duration_days=(pl.col("ended_on") - pl.col("started_on")).dt.total_days(),
        last_updated=pl.lit(last_updated, pl.Int64),
    )
