"""Charts from the warehouse: the bands are Bollinger(20, 2), the window and trades are the
warehouse's, and every market draws (PNG and SVG)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import date, timedelta
from pathlib import Path

import duckdb
import numpy as np
import polars as pl
import pytest

from analysis.charts import UnknownSymbolError, chart, draw, load, with_bollinger
from analysis.warehouse import NotMaterializedError, open_warehouse
from pipelines.catalog import LocalStorage

pytestmark = pytest.mark.slow

EVERY_MARKET = [("crypto", "BTC"), ("forex", "EURUSD"), ("commodities", "GOLD"), ("stocks", "AAPL")]


@pytest.fixture(scope="module")
def warehouse(embedded_market: Path) -> Iterator[duckdb.DuckDBPyConnection]:
    with open_warehouse(LocalStorage(embedded_market / "warehouse")) as connection:
        yield connection


@pytest.mark.parametrize("index", [19, 20, 24])
def test_the_bands_are_the_20_day_mean_two_population_deviations_apart(index: int) -> None:
    closes = [
        float(c)
        for c in (3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 8, 9, 7, 9, 3, 2, 3, 8, 4, 6, 2, 6, 4, 3)
    ]
    row = with_bollinger(pl.DataFrame({"close": closes})).row(index, named=True)
    window = np.array(closes[index - 19 : index + 1])
    assert row["bb_middle"] == pytest.approx(window.mean())
    assert row["bb_upper"] - row["bb_middle"] == pytest.approx(2 * window.std(ddof=0))
    assert row["bb_middle"] - row["bb_lower"] == pytest.approx(2 * window.std(ddof=0))
    assert with_bollinger(pl.DataFrame({"close": closes}))["bb_middle"][18] is None


def test_the_data_is_the_last_days_with_their_segments_and_the_strategys_trades(
    warehouse: duckdb.DuckDBPyConnection,
) -> None:
    data = load(warehouse, "btc", "crypto", days=120, strategy="conservative")
    days = data.prices["date"].to_list()
    assert len(days) == 120  # crypto: a bar every calendar day
    assert days == [days[0] + timedelta(days=i) for i in range(120)]
    assert data.prices["bb_middle"].null_count() == 0  # computed over the whole history
    assert data.segments["started_on"].min() <= days[0]
    assert data.segments["ended_on"].max() == days[-1]
    stored = warehouse.sql(
        "SELECT count(*) FROM backtest_trades WHERE market = 'crypto' AND symbol = 'BTC' AND "
        "strategy = 'conservative' AND fill = 'close' AND coalesce(sell_date, start_date) >= ? "
        "AND years = "
        "(SELECT max(years) FROM backtest_trades WHERE symbol = 'BTC' AND market = 'crypto')",
        params=[days[0]],
    ).fetchall()
    assert data.trades.height == stored[0][0]


@pytest.mark.parametrize(("market", "symbol"), EVERY_MARKET)
def test_a_chart_is_drawn_for_every_market(
    warehouse: duckdb.DuckDBPyConnection, tmp_path: Path, market: str, symbol: str
) -> None:
    """Close, the bands, the averages, one shaded band per segment and a marker per trade."""
    data = load(warehouse, symbol, market, days=365)
    figure = draw(data)
    [axes] = figure.axes
    lines = {line.get_label(): line for line in axes.get_lines()}
    assert {"close", "SMA 20 (middle band)", "SMA 50", "SMA 200"} <= set(lines)
    assert list(lines["close"].get_ydata()) == data.prices["close"].to_list()
    assert len(axes.patches) == data.segments.height  # the shaded trend segments
    assert data.segments.height > 0
    figure.savefig(tmp_path / "chart.png")
    figure.savefig(tmp_path / "chart.svg")
    assert (tmp_path / "chart.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "<svg" in (tmp_path / "chart.svg").read_text()[:500]


def test_trades_entered_before_the_window_show_their_exit_only(
    warehouse: duckdb.DuckDBPyConnection,
) -> None:
    data = load(warehouse, "ETH", "crypto", days=60)
    figure = draw(data)
    buys, sells = figure.axes[0].collections[1:3]  # after the bands' fill
    first = data.prices["date"].min()
    assert isinstance(first, date)
    assert len(buys.get_offsets()) == data.trades.filter(pl.col("start_date") >= first).height
    assert len(sells.get_offsets()) == data.trades["sell_date"].drop_nulls().len()


def test_an_unknown_symbol_market_or_strategy_is_an_error(
    warehouse: duckdb.DuckDBPyConnection,
) -> None:
    with pytest.raises(UnknownSymbolError, match="NOPE is not an instrument of the crypto market"):
        load(warehouse, "nope")
    with pytest.raises(ValueError, match="markets"):
        load(warehouse, "BTC", "bonds")
    with pytest.raises(ValueError, match="strategies"):
        load(warehouse, "BTC", strategy="yolo")


def test_in_a_notebook_chart_reads_the_warehouse_of_the_environment(
    embedded_market: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MI_DATA_DIR", str(embedded_market))
    monkeypatch.delenv("MI_WAREHOUSE_URL", raising=False)
    figure = chart("gold", "commodities", 90)
    assert "GOLD (commodities)" in figure.axes[0].get_title()


def test_an_empty_data_dir_is_not_materialized(tmp_path: Path) -> None:
    with pytest.raises(NotMaterializedError, match="mi materialize"):
        open_warehouse(LocalStorage(tmp_path / "warehouse"))
