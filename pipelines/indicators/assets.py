"""Dagster adapter of the indicators domain: `indicator_snapshots` from `daily_prices`, per market."""

from collections.abc import Iterator

import dagster as dg
import numpy as np
import polars as pl

from pipelines.catalog import INDICATOR_SNAPSHOTS
from pipelines.indicators.all_periods import FLAT_MEMBERS, all_periods_frame
from pipelines.partitions import MARKET_PARTITIONS

BOUNDED = ("rsi", "adx", "stoch_k", "stoch_d")
"""Oscillators whose values lie in 0..100."""

INDICATOR_CHECKS = {
    "finite_values": "No NaN or infinity in any indicator column (missing values are null).",
    "oscillators_in_0_100": "rsi, adx, stoch_k and stoch_d lie in 0..100.",
    "every_period_per_symbol": "Every symbol has exactly one row for each period 2..365.",
}


def snapshots(prices: pl.DataFrame, market: str) -> pl.DataFrame:
    """The `indicator_snapshots` partition of one market from its daily bars."""
    bars = prices.sort("symbol", "date")
    frame = all_periods_frame(bars, by=("symbol",))
    return INDICATOR_SNAPSHOTS.conform(frame.with_columns(market=pl.lit(market)))


def _markdown(frame: pl.DataFrame, rows: int = 10) -> str:
    with pl.Config(tbl_formatting="MARKDOWN", tbl_hide_dataframe_shape=True):
        return str(frame.head(rows))


def _result(name: str, offending: pl.DataFrame) -> dg.AssetCheckResult:
    return dg.AssetCheckResult(
        asset_key=INDICATOR_SNAPSHOTS.name,
        check_name=name,
        passed=offending.is_empty(),
        metadata={
            "offending_count": offending.height,
            "offending_rows": dg.MetadataValue.md(_markdown(offending)),
        },
    )


def non_finite_rows(frame: pl.DataFrame) -> pl.DataFrame:
    """Rows with NaN or infinity in any indicator column."""
    bad = pl.any_horizontal(~pl.col(c).is_finite() for c in FLAT_MEMBERS)
    return frame.filter(bad.fill_null(False))


def out_of_range_rows(frame: pl.DataFrame) -> pl.DataFrame:
    """Rows whose oscillators leave 0..100."""
    bad = pl.any_horizontal(~pl.col(c).is_between(0.0, 100.0) for c in BOUNDED)
    return frame.filter(bad.fill_null(False)).select("symbol", "period", *BOUNDED)


def incomplete_symbols(frame: pl.DataFrame, periods: int = 364) -> pl.DataFrame:
    """Symbols without exactly one row per period."""
    counts = frame.group_by("symbol").agg(
        pl.len().alias("rows"), pl.col("period").n_unique().alias("periods")
    )
    return counts.filter((pl.col("rows") != periods) | (pl.col("periods") != periods))


def check_results(frame: pl.DataFrame) -> Iterator[dg.AssetCheckResult]:
    yield _result("finite_values", non_finite_rows(frame))
    yield _result("oscillators_in_0_100", out_of_range_rows(frame))
    yield _result("every_period_per_symbol", incomplete_symbols(frame))


@dg.asset(
    name=INDICATOR_SNAPSHOTS.name,
    description=INDICATOR_SNAPSHOTS.description,
    ins={"daily_prices": dg.AssetIn(key="daily_prices")},
    partitions_def=MARKET_PARTITIONS,
    check_specs=[
        dg.AssetCheckSpec(name, asset=INDICATOR_SNAPSHOTS.name, description=description)
        for name, description in INDICATOR_CHECKS.items()
    ],
    group_name="analytics",
)
def indicator_snapshots(
    context: dg.AssetExecutionContext, daily_prices: pl.DataFrame
) -> Iterator[dg.Output[pl.DataFrame] | dg.AssetCheckResult]:
    frame = snapshots(daily_prices, context.partition_key)
    newest = frame["date"].max()
    yield dg.Output(
        frame,
        metadata={
            "dagster/row_count": frame.height,
            "symbols": frame["symbol"].n_unique(),
            "newest_date": str(newest) if newest is not None else "none",
            "null_share": float(np.mean([frame[c].null_count() for c in FLAT_MEMBERS]))
            / max(frame.height, 1),
        },
    )
    yield from check_results(frame)
