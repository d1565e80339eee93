"""The whole product: the real pipeline materializes a warehouse, the metered API serves it.

Numbers are checked against independent references: TA-Lib over the warehouse's own bars, and the
warehouse tables read back with DuckDB. Field names are written out from the spec.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
import pytest
import talib
from litestar.testing import TestClient

from api.app import asgi_app
from pipelines.catalog import read_manifest

pytestmark = pytest.mark.slow

END_DATE = "2026-06-30"
MARKETS = "crypto,forex"
MI = str(Path(sys.executable).with_name("mi"))

# Field names exactly as the spec's resource tables give them.
BRIEF = {
    "timestamp", "date", "title", "symbols", "body", "fud_fomo_bias", "fud_fomo_score",
    "sentiment", "tone", "article_id", "clout", "impacted_coins", "speculation_score",
}  # fmt: skip
TRADE = {
    "strategy", "exit_reason", "action", "symbol", "start_date", "profit_percent", "days_in_trade",
    "entry_price", "exit_price", "highest_price", "last_price", "lowest_price", "profit",
    "sell_date", "start_price",
}  # fmt: skip
TREND_ENTRY = {
    "close", "started_at", "started_on", "peak_loss", "trend", "long_term_average",
    "mid_term_average", "short_term_average", "max_price", "min_price", "max_price_day",
    "min_price_day", "peak_gain", "signal_strength", "trend_duration_days",
}  # fmt: skip
SUMMARY = {
    "start_date", "end_date", "annualized_return", "average_loss", "average_loss_percent",
    "average_profit", "average_profit_percent", "average_trade_duration", "backtest_duration",
    "buy_and_hold_profit_percent", "final_value", "initial_investment", "peak_loss",
    "peak_profit", "profit_percent", "profitable_trade_percent", "total_profit",
    "profitable_trades", "total_trades", "unprofitable_trades",
}  # fmt: skip
SCORECARD = {
    "name", "strategy", "action", "symbol", "icon", "total_trades", "score",
    "buy_and_hold_percentage", "in_trade", "percentage_profit", "trend", "trend_duration",
}  # fmt: skip
INDICATORS = {
    "adx", "atr", "bollinger_bands", "ema", "fibonacci_retracement", "macd", "obv", "roc",
    "rsi", "sma", "stochastic_oscillator", "vwap",
}  # fmt: skip


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    data = tmp_path_factory.mktemp("product")
    env = {**os.environ, "MI_DATA_DIR": str(data), "MI_INSTRUMENTS": "16", "MI_END_DATE": END_DATE}
    subprocess.run(
        [MI, "materialize", "--market", MARKETS], env=env, check=True, capture_output=True
    )
    return data


@pytest.fixture(scope="module")
def client(data_dir: Path) -> Iterator[TestClient[Any]]:
    env = {"MI_DATA_DIR": str(data_dir)}
    created = subprocess.run(
        [MI, "keys", "create", "--plan", "internal", "--name", "e2e"],
        env={**os.environ, **env},
        check=True,
        capture_output=True,
        text=True,
    )
    key = created.stdout.strip().splitlines()[-1]
    with pytest.MonkeyPatch.context() as patch:
        for name, value in env.items():
            patch.setenv(name, value)
        app = asgi_app()
    with TestClient(app) as test_client:
        test_client.headers["Authorization"] = f"Bearer {key}"
        yield test_client


@pytest.fixture(scope="module")
def warehouse(data_dir: Path) -> Iterator[duckdb.DuckDBPyConnection]:
    manifest = read_manifest(data_dir / "warehouse")
    assert manifest is not None
    con = duckdb.connect()
    for table in manifest.tables:
        files = [str(data_dir / "warehouse" / f) for f in manifest.files(table)]
        con.execute(f"CREATE VIEW {table} AS SELECT * FROM read_parquet({files!r})")
    yield con
    con.close()


def get(client: TestClient[Any], path: str) -> Any:
    response = client.get(path)
    assert response.status_code == 200, (path, response.text)
    assert int(response.headers["x-tokens-cost"]) >= 1
    return response.json()


def test_list_symbols_serves_the_instruments_table_sorted(
    client: TestClient[Any], warehouse: duckdb.DuckDBPyConnection
) -> None:
    stored = warehouse.sql("select symbol from instruments where market = 'crypto' order by 1")
    body = get(client, "/api/v2/crypto/instruments/list-symbols")
    assert body == {"symbols": [s for (s,) in stored.fetchall()]}


def test_the_full_price_history_is_the_stored_daily_series(
    client: TestClient[Any], warehouse: duckdb.DuckDBPyConnection
) -> None:
    stored = warehouse.sql(
        "select timestamp, close, volume from daily_prices "
        "where market = 'crypto' and symbol = 'BTC' order by date"
    ).fetchall()
    body = get(client, "/api/v2/crypto/technical-analysis/get-price-history/btc")
    served = [(p["timestamp"], p["price"], p["volume"]) for p in body["price_history"]]
    assert served == stored
    assert body["price_history"][-1]["date"] == END_DATE


@pytest.mark.parametrize("period", [2, 14, 30, 200])
def test_indicators_equal_ta_lib_over_the_warehouse_bars(
    client: TestClient[Any], warehouse: duckdb.DuckDBPyConnection, period: int
) -> None:
    bars = warehouse.sql(
        "select high, low, close from daily_prices "
        "where market = 'forex' and symbol = 'EURUSD' order by date"
    ).fetchnumpy()
    high, low, close = (np.asarray(bars[c], dtype=float) for c in ("high", "low", "close"))
    path = f"/api/v2/forex/technical-analysis/get-indicators/EURUSD?period={period}"
    served = get(client, path)
    assert served["period"] == period
    indicators = served["indicators"]
    assert set(indicators) == INDICATORS
    expected = {
        "sma": talib.SMA(close, period)[-1],
        "ema": talib.EMA(close, period)[-1],
        "rsi": talib.RSI(close, period)[-1],
        "atr": talib.ATR(high, low, close, period)[-1],
        "roc": talib.ROC(close, period)[-1],
    }
    for name, value in expected.items():
        assert indicators[name] == pytest.approx(value, rel=1e-9), name
    macd, signal, histogram = (series[-1] for series in talib.MACD(close, 12, 26, 9))
    assert indicators["macd"] == pytest.approx(
        {"macd_line": macd, "signal_line": signal, "histogram": histogram}, rel=1e-9
    )


def test_every_crypto_route_serves_the_spec_fields(client: TestClient[Any]) -> None:
    base = "/api/v2/crypto"
    assert set(get(client, f"{base}/instruments/get-detail/BTC")) == {"name", "symbol", "logo"}
    assert set(get(client, f"{base}/instruments/scorecard/BTC")) == SCORECARD
    found = get(client, f"{base}/instruments/search-instruments/BTC")["instruments"]
    assert found[0]["symbol"] == "BTC"
    briefs = get(client, f"{base}/newsroom/get-recent-briefs/BTC?limit=3")["briefs"]
    assert len(briefs) == 3
    assert all(set(b) == BRIEF and "BTC" in b["symbols"] for b in briefs)
    article = get(client, f"{base}/newsroom/get-article/{briefs[0]['article_id']}")
    assert article == briefs[0]
    assert set(get(client, f"{base}/trades/get-backtest-summary/BTC/aggressive")) == SUMMARY
    trades = get(client, f"{base}/trades/get-backtest-history/BTC/conservative")["trades"]
    assert all(set(t) == TRADE for t in trades)
    action = get(client, f"{base}/trades/get-current-action/BTC/aggressive")
    assert action["action"] in {"Buy", "Sell", "Hold", "Stay"}
    for route in ("get-recent-buys", "get-recent-sells"):
        assert all(set(t) == TRADE for t in get(client, f"{base}/trades/{route}")["trades"])
    recommendations = get(client, f"{base}/trades/get-recommendations?min_score=0")
    assert all(0 <= r["score"] <= 5 for r in recommendations["recommendations"])
    trends = get(client, f"{base}/trades/get-trend-history/BTC/30")["trends"]
    assert [t["date"] for t in trends] == sorted((t["date"] for t in trends), reverse=True)
    legacy = get(client, "/api/v2/market/trends/BTC")["Success"]
    assert legacy["coin"] == "BTC"
    analysis = get(client, f"{base}/newsroom/get-instrument-analysis/BTC")
    assert analysis["date"] == END_DATE
    assert "Bitcoin" in analysis["analysis"] or "BTC" in analysis["analysis"]
    summary = get(client, f"{base}/newsroom/get-market-summary")
    assert summary["date"] == END_DATE
    assert summary["summary"]


def test_sentiment_history_counts_the_briefs_of_each_day(
    client: TestClient[Any], warehouse: duckdb.DuckDBPyConnection
) -> None:
    points = get(client, "/api/v2/crypto/sentiment/get-sentiment-history/BTC?limit=10")
    for point in points["sentiment"]:
        assert point["total"] == point["positive"] + point["neutral"] + point["negative"]
        [(briefs,)] = warehouse.sql(
            "select count(*) from briefs where market = 'crypto' "
            "and list_contains(symbols, 'BTC') and date = cast(? as date)",
            params=[point["date"]],
        ).fetchall()
        assert point["total"] == briefs


def test_the_running_segment_is_the_current_trend(client: TestClient[Any]) -> None:
    current = get(client, "/api/v2/forex/trades/get-current-trend/EURUSD")
    segments = get(client, "/api/v2/forex/trades/get-trend-segments/EURUSD?limit=5")
    assert set(current["current_trend"]) == TREND_ENTRY
    assert segments["trend_segments"][0] == current["current_trend"]
    newest_first = [s["started_at"] for s in segments["trend_segments"]]
    assert newest_first == sorted(newest_first, reverse=True)
