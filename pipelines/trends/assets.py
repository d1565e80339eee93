"""Dagster adapter of the trends domain: `trend_history` + `trend_segments` from `daily_prices`."""

from collections.abc import Callable, Iterator
from datetime import UTC, datetime

import dagster as dg
import polars as pl

from pipelines.catalog import TREND_HISTORY, TREND_SEGMENTS
from pipelines.partitions import MARKET_PARTITIONS
from pipelines.trends import checks
from pipelines.trends.frames import trend_history, trend_segments

HISTORY_CHECKS: dict[str, tuple[str, Callable[[pl.DataFrame], pl.DataFrame]]] = {
    "history_finite": ("No NaN or infinity in trend_history.", checks.non_finite),
    "history_labels": ("trend and strength are allowed labels.", checks.bad_labels),
}
SEGMENT_CHECKS: dict[str, tuple[str, Callable[[pl.DataFrame], pl.DataFrame]]] = {
    "segments_finite": ("No NaN or infinity in trend_segments.", checks.non_finite),
    "segments_contiguous": (
        "Each segment starts on the bar where the previous one ended; numbered 0, 1, ...",
        checks.discontiguous,
    ),
    "one_running_segment": (
        "Exactly one running segment per symbol, the newest.",
        checks.running_not_once,
    ),
    "durations_and_extremes": (
        "trend_duration_days = calendar days start..end; extremes inside; peak_gain >= 0 >= peak_loss.",
        checks.wrong_durations,
    ),
}


def _markdown(frame: pl.DataFrame, rows: int = 10) -> str:
    with pl.Config(tbl_formatting="MARKDOWN", tbl_hide_dataframe_shape=True):
        return str(frame.head(rows))


def _results(
    asset: str,
    frame: pl.DataFrame,
    specs: dict[str, tuple[str, Callable[[pl.DataFrame], pl.DataFrame]]],
) -> Iterator[dg.AssetCheckResult]:
    for name, (_, find) in specs.items():
        offending = find(frame)
        yield dg.AssetCheckResult(
            asset_key=asset,
            check_name=name,
            passed=offending.is_empty(),
            metadata={
                "offending_count": offending.height,
                "offending_rows": dg.MetadataValue.md(_markdown(offending)),
            },
        )


def trend_tables(
    prices: pl.DataFrame, market: str, now: datetime
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Both partitions of one market, conformed to the catalog."""
    bars = prices.filter(pl.col("market") == market).sort("symbol", "date")
    history = trend_history(bars)
    segments = trend_segments(history, int(now.timestamp() * 1000))
    return TREND_HISTORY.conform(history), TREND_SEGMENTS.conform(segments)


def _specs() -> list[dg.AssetCheckSpec]:
    pairs = [(TREND_HISTORY.name, HISTORY_CHECKS), (TREND_SEGMENTS.name, SEGMENT_CHECKS)]
    return [
        dg.AssetCheckSpec(name, asset=asset, description=description)
        for asset, specs in pairs
        for name, (description, _) in specs.items()
    ]


@dg.multi_asset(
    name="trends",
    outs={
        TREND_HISTORY.name: dg.AssetOut(
            key=TREND_HISTORY.name, description=TREND_HISTORY.description
        ),
        TREND_SEGMENTS.name: dg.AssetOut(
            key=TREND_SEGMENTS.name, description=TREND_SEGMENTS.description
        ),
    },
    ins={"daily_prices": dg.AssetIn(key="daily_prices")},
    partitions_def=MARKET_PARTITIONS,
    check_specs=_specs(),
    group_name="analytics",
)
def trends(
    context: dg.AssetExecutionContext, daily_prices: pl.DataFrame
) -> Iterator[dg.Output[pl.DataFrame] | dg.AssetCheckResult]:
    history, segments = trend_tables(daily_prices, context.partition_key, datetime.now(UTC))
    yield dg.Output(
        history,
        output_name=TREND_HISTORY.name,
        metadata={"dagster/row_count": history.height, "symbols": history["symbol"].n_unique()},
    )
    yield dg.Output(
        segments,
        output_name=TREND_SEGMENTS.name,
        metadata={
            "dagster/row_count": segments.height,
            "running": dg.MetadataValue.json(
                dict(segments.filter("is_running")["trend"].value_counts().iter_rows())
            ),
        },
    )
    yield from _results(TREND_HISTORY.name, history, HISTORY_CHECKS)
    yield from _results(TREND_SEGMENTS.name, segments, SEGMENT_CHECKS)
