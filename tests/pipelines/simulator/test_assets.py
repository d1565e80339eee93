"""The trade_simulator multi-asset of the daily job: its five tables stored, checks passing, read by DuckDB."""

from datetime import date, timedelta
from pathlib import Path

import dagster as dg
import duckdb
import numpy as np
import polars as pl

from pipelines.catalog import INSTRUMENTS, RECOMMENDATIONS, SCORECARDS, TREND_SEGMENTS
from pipelines.simulator.assets import (
    POSITIONS_CHECK,
    build_positions_check,
    build_trade_simulator,
)
from pipelines.simulator.update import SimulatorConfig
from pipelines.warehouse.store import Warehouse
from tests.pipelines.synthetic import load_prices, materialize_daily

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


LAST = date(2022, 1, 1) + timedelta(days=BARS - 1)


def instruments(market: str) -> pl.DataFrame:
    return pl.DataFrame(
        {
            "market": market,
            "symbol": SYMBOLS,
            "name": ["Aaa", "Bbb", "Ccc"],
            "logo": "l",
            "source": "t",
        }
    )


def trend_segments(market: str) -> pl.DataFrame:
    """Stand-in for the trends domain's table (running segment of AAA only; other columns 0)."""
    given = pl.DataFrame(
        {
            "market": market,
            "symbol": ["AAA", "AAA"],
            "segment": [0, 1],
            "is_running": [False, True],
            "trend": ["down", "up"],
            "trend_duration_days": [40, 12],
        }
    )
    filler = [
        pl.lit(0).cast(c.dtype).alias(c.name)
        for c in TREND_SEGMENTS.columns
        if c.name not in given.columns
    ]
    return TREND_SEGMENTS.conform(given.with_columns(filler))


def stored_market(tmp_path: Path, market: str, trends: bool) -> Warehouse:
    warehouse = Warehouse(tmp_path / "warehouse")
    bars = small_market(market).drop("market", "timestamp", "source")
    load_prices(warehouse, bars, market, LAST)
    warehouse.write(INSTRUMENTS, market, instruments(market))
    if trends:
        warehouse.write(TREND_SEGMENTS, market, trend_segments(market))
    return warehouse


def test_one_market_materializes_all_five_tables_with_passing_checks(tmp_path: Path) -> None:
    warehouse = stored_market(tmp_path, "crypto", trends=True)
    result = materialize_daily(
        warehouse, [build_trade_simulator(SimulatorConfig())], LAST, ["crypto"]
    )
    assert result.success
    checks = result.get_asset_check_evaluations()
    assert len(checks) == 12
    assert all(c.passed for c in checks), [c.check_name for c in checks if not c.passed]
    root = warehouse.root
    with duckdb.connect() as db:
        tables = ("backtest_trades", "backtest_summaries", "current_actions", "scorecards")
        for t in (*tables, "recommendations"):
            files = ", ".join(f"'{root / p}'" for p in warehouse.manifest().files(t))  # type: ignore[union-attr]
            db.execute(f"create view {t} as from read_parquet([{files}])")
        counts = {t: db.execute(f"select count(*) from {t}").fetchone()[0] for t in tables}  # type: ignore[index]
        cards = db.execute(
            "select symbol, strategy, trend, trend_duration, name from scorecards order by 1, 2"
        ).fetchall()
    assert counts["backtest_trades"] > 0
    # 3 symbols x 2 strategies x 2 fills x ceil(899 days / 365.25) = 3 windows
    assert counts["backtest_summaries"] == 3 * 2 * 2 * 3
    assert counts["current_actions"] == counts["scorecards"] == 6
    assert cards[0] == ("AAA", "aggressive", "up", 12, "Aaa")
    assert cards[2][2:4] == (None, None)


def test_a_market_without_stored_trends_gets_null_trends(tmp_path: Path) -> None:
    """trend_segments may not be materialized yet: the scorecards then have no trend."""
    warehouse = stored_market(tmp_path, "forex", trends=False)
    materialize_daily(warehouse, [build_trade_simulator(SimulatorConfig())], LAST, ["forex"])
    cards = warehouse.read(SCORECARDS, ["forex"])
    assert cards.select("trend", "trend_duration").unique().rows() == [(None, None)]


def test_scorecards_follow_a_renamed_instrument_and_a_new_trend_without_new_bars(
    tmp_path: Path,
) -> None:
    """Scorecards read other domains' current tables: a run with no new bar still shows the
    instruments' names and the running trends as they now are, and backtests stay untouched."""
    warehouse = stored_market(tmp_path, "crypto", trends=True)
    simulator = [build_trade_simulator(SimulatorConfig())]
    materialize_daily(warehouse, simulator, LAST, ["crypto"])
    trades = warehouse.manifest().files("backtest_trades")  # type: ignore[union-attr]
    warehouse.write(INSTRUMENTS, "crypto", instruments("crypto").with_columns(name=pl.lit("New")))
    segments = trend_segments("crypto").with_columns(trend=pl.lit("down"))
    warehouse.write(TREND_SEGMENTS, "crypto", segments)
    materialize_daily(warehouse, simulator, LAST, ["crypto"])
    cards = warehouse.read(SCORECARDS, ["crypto"]).sort("symbol", "strategy")
    assert set(cards["name"]) == {"New"}
    assert cards.row(0, named=True)["trend"] == "down"
    assert warehouse.manifest().files("backtest_trades") == trades  # type: ignore[union-attr]


def _positions_check(warehouse: Warehouse, market: str) -> dg.AssetCheckEvaluation:
    result = materialize_daily(
        warehouse,
        [build_trade_simulator(SimulatorConfig()), build_positions_check()],  # type: ignore[list-item]
        LAST,
        [market],
    )
    (evaluation,) = [
        c for c in result.get_asset_check_evaluations() if c.check_name == POSITIONS_CHECK
    ]
    return evaluation


def test_a_market_some_strategy_is_long_on_passes_the_positions_check(tmp_path: Path) -> None:
    warehouse = stored_market(tmp_path, "crypto", trends=True)
    evaluation = _positions_check(warehouse, "crypto")
    held = warehouse.read(RECOMMENDATIONS, ["crypto"]).height
    assert held > 0
    assert evaluation.passed
    assert evaluation.metadata["positions_by_market"].value == {"crypto": held}


def test_a_market_with_nothing_to_recommend_warns(tmp_path: Path) -> None:
    """Rule: a market whose latest day has no position (every series falling) is named, WARN."""
    warehouse = Warehouse(tmp_path / "warehouse")
    falling = small_market("stocks").with_columns(
        (pl.lit(1000.0) * (0.995 ** pl.int_range(pl.len()).over("symbol"))).alias("close")
    )
    falling = falling.with_columns(
        open=pl.col("close"), high=pl.col("close") * 1.01, low=pl.col("close") * 0.99
    )
    load_prices(warehouse, falling.drop("market", "timestamp", "source"), "stocks", LAST)
    warehouse.write(INSTRUMENTS, "stocks", instruments("stocks"))
    evaluation = _positions_check(warehouse, "stocks")
    assert warehouse.read(RECOMMENDATIONS, ["stocks"]).height == 0
    assert not evaluation.passed
    assert evaluation.severity == dg.AssetCheckSeverity.WARN
    assert evaluation.metadata["empty_markets"].value == "stocks"
