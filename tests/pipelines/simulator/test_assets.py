"""The trade_simulator multi-asset: one market materialized into the warehouse, checks passing, read by DuckDB."""

from datetime import date, timedelta
from pathlib import Path

import dagster as dg
import duckdb
import numpy as np
import polars as pl
from dagster import AssetExecutionContext

from pipelines.catalog import TREND_SEGMENTS
from pipelines.partitions import MARKET_PARTITIONS
from pipelines.simulator.assets import SimulatorConfig, build_trade_simulator
from pipelines.warehouse.io_manager import WarehouseIOManager

SYMBOLS = ("AAA", "BBB", "CCC")
BARS = 900


def small_market(market: str) -> pl.DataFrame:
    """Three trending, noisy daily series of 900 bars (enough for SMA(200) and some trades)."""
    rng = np.random.default_rng(3)
    frames = []
    for k, symbol in enumerate(SYMBOLS):
        drift = np.repeat(rng.normal(0.0, 0.005, BARS // 100 + 1), 100)[:BARS]
        close = 50.0 * (k + 1) * np.exp(np.cumsum(rng.normal(drift, 0.02)))
        open_ = np.r_[close[0], close[:-1]]
        days = [date(2022, 1, 1) + timedelta(days=i) for i in range(BARS)]
        frames.append(
            pl.DataFrame(
                {
                    "market": market,
                    "symbol": symbol,
                    "date": days,
                    "timestamp": [0] * BARS,
                    "open": open_,
                    "high": np.maximum(open_, close) * 1.01,
                    "low": np.minimum(open_, close) * 0.99,
                    "close": close,
                    "volume": 1.0,
                    "source": "test",
                }
            )
        )
    return pl.concat(frames)


@dg.asset(partitions_def=MARKET_PARTITIONS)
def daily_prices(context: AssetExecutionContext) -> pl.DataFrame:
    return small_market(context.partition_key)


@dg.asset(partitions_def=MARKET_PARTITIONS)
def instruments(context: AssetExecutionContext) -> pl.DataFrame:
    market = context.partition_key
    return pl.DataFrame(
        {
            "market": market,
            "symbol": SYMBOLS,
            "name": ["Aaa", "Bbb", "Ccc"],
            "logo": "l",
            "source": "t",
        }
    )


@dg.asset(partitions_def=MARKET_PARTITIONS)
def trend_segments(context: AssetExecutionContext) -> pl.DataFrame:
    """Stand-in for the trends domain's table (running segment of AAA only; other columns 0)."""
    given = pl.DataFrame(
        {
            "market": context.partition_key,
            "symbol": ["AAA", "AAA"],
            "segment": [0, 1],
            "is_running": [False, True],
            "trend": ["down", "up"],
            "trend_duration_days": [40, 12],
        }
    )
    filler = [pl.lit(0).cast(c.dtype).alias(c.name) for c in TREND_SEGMENTS.columns if c.name not in given.columns]  # fmt: skip
    return TREND_SEGMENTS.conform(given.with_columns(filler))


def test_one_market_materializes_all_five_tables_with_passing_checks(tmp_path: Path) -> None:
    warehouse = tmp_path / "warehouse"
    io_manager = WarehouseIOManager(warehouse_dir=str(warehouse))
    result = dg.materialize(
        [
            daily_prices,
            instruments,
            trend_segments,
            build_trade_simulator(SimulatorConfig()),
        ],
        resources={"io_manager": io_manager},
        partition_key="crypto",
    )
    assert result.success
    checks = result.get_asset_check_evaluations()
    assert len(checks) == 12
    assert all(c.passed for c in checks), [c.check_name for c in checks if not c.passed]
    with duckdb.connect() as db:
        tables = ("backtest_trades", "backtest_summaries", "current_actions", "scorecards")
        for t in (*tables, "recommendations"):
            db.execute(f"create view {t} as from read_parquet('{warehouse}/{t}/**/*.parquet')")
        counts = {t: db.execute(f"select count(*) from {t}").fetchone()[0] for t in tables}  # type: ignore[index]
        cards = db.execute(
            "select symbol, strategy, trend, trend_duration, name from scorecards order by 1, 2"
        ).fetchall()
    assert counts["backtest_trades"] > 0
    assert counts["backtest_summaries"] == 3 * 2 * 3  # ceil(899 days / 365.25) = 3 windows
    assert counts["current_actions"] == counts["scorecards"] == 6
    assert cards[0] == ("AAA", "aggressive", "up", 12, "Aaa")
    assert cards[2][2:4] == (None, None)


def test_a_market_without_stored_trends_gets_null_trends(tmp_path: Path) -> None:
    """trend_segments is an input that may not be materialized yet: it then reads as no rows."""
    warehouse = tmp_path / "warehouse"
    result = dg.materialize(
        [daily_prices, instruments, trend_segments, build_trade_simulator(SimulatorConfig())],
        resources={"io_manager": WarehouseIOManager(warehouse_dir=str(warehouse))},
        partition_key="forex",
        selection=dg.AssetSelection.all() - dg.AssetSelection.assets("trend_segments"),
    )
    assert result.success
    with duckdb.connect() as db:
        cards = db.execute(
            f"select distinct trend, trend_duration from read_parquet('{warehouse}/scorecards/**/*.parquet')"
        ).fetchall()
    assert cards == [(None, None)]
