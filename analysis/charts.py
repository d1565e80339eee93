"""A symbol's chart: price with Bollinger bands and moving averages, trend segments shaded by
direction, the simulator's trades marked. `chart(...)` in a notebook, `mi chart` on the command line."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, timedelta

import duckdb
import polars as pl
from matplotlib.axes import Axes
from matplotlib.dates import AutoDateLocator, ConciseDateFormatter
from matplotlib.figure import Figure

from analysis.warehouse import open_warehouse
from pipelines.catalog import MARKETS, STRATEGIES

BOLLINGER_DAYS = 20
BOLLINGER_WIDTH = 2.0
"""Bollinger(20, 2): the bands of the 20-day SMA at 2 population standard deviations, as
docs/indicators.md defines them."""
AVERAGES = {
    "short_term_average": "SMA 20",
    "mid_term_average": "SMA 50",
    "long_term_average": "SMA 200",
}
"""The moving averages drawn: the trend method's own (trend_history), so the shading agrees."""
SHADES = {"up": "#2ca02c", "down": "#d62728", "neutral": "#7f7f7f"}
DEFAULT_DAYS = 365


class UnknownSymbolError(LookupError):
    """The symbol is not an instrument of the market."""


@dataclass(frozen=True)
class ChartData:
    """What a chart shows, read from the warehouse: daily closes with the bands and averages
    (`prices`), the trend segments that overlap them and the strategy's trades."""

    market: str
    symbol: str
    strategy: str
    prices: pl.DataFrame
    """date, close, bb_upper, bb_middle, bb_lower and the AVERAGES columns, oldest first."""
    segments: pl.DataFrame
    """started_on, ended_on, trend."""
    trades: pl.DataFrame
    """start_date, start_price, sell_date (null while open), last_price."""


PRICES_SQL = """
SELECT p.date, p.close, t.short_term_average, t.mid_term_average, t.long_term_average
FROM daily_prices p LEFT JOIN trend_history t USING (market, symbol, date)
WHERE p.market = ? AND p.symbol = ? ORDER BY p.date
"""
SEGMENTS_SQL = """
SELECT started_on, ended_on, trend FROM trend_segments
WHERE market = ? AND symbol = ? AND ended_on >= ? ORDER BY segment
"""
# The longest stored window of the strategy filled at the close (its trades cover the whole history
# shown, and its marks sit on the closes drawn), every trade entered or left in the days shown.
TRADES_SQL = """
SELECT start_date, start_price, sell_date, last_price FROM backtest_trades
WHERE market = ? AND symbol = ? AND strategy = ? AND fill = 'close'
AND coalesce(sell_date, start_date) >= ? AND years = (
    SELECT max(years) FROM backtest_trades
    WHERE market = ? AND symbol = ? AND strategy = ? AND fill = 'close')
ORDER BY start_date
"""


def with_bollinger(prices: pl.DataFrame) -> pl.DataFrame:
    """`prices` with bb_middle, bb_upper and bb_lower of its closes (null until 20 closes)."""
    middle = pl.col("close").rolling_mean(BOLLINGER_DAYS)
    spread = BOLLINGER_WIDTH * pl.col("close").rolling_std(BOLLINGER_DAYS, ddof=0)
    return prices.with_columns(bb_upper=middle + spread, bb_middle=middle, bb_lower=middle - spread)


def load(
    connection: duckdb.DuckDBPyConnection,
    symbol: str,
    market: str = "crypto",
    days: int = DEFAULT_DAYS,
    strategy: str = "aggressive",
) -> ChartData:
    """The last `days` calendar days of `symbol` (the bands computed over the whole history, so
    the first days shown have theirs)."""
    symbol, market, strategy = symbol.upper(), market.lower(), strategy.lower()
    _check(market, strategy)
    history = connection.sql(PRICES_SQL, params=[market, symbol]).pl()
    if history.is_empty():
        raise UnknownSymbolError(f"{symbol} is not an instrument of the {market} market")
    first = history["date"].max() - timedelta(days=days - 1)
    prices = with_bollinger(history).filter(pl.col("date") >= first)
    segments = connection.sql(SEGMENTS_SQL, params=[market, symbol, first]).pl()
    trades_params = [market, symbol, strategy, first, market, symbol, strategy]
    trades = connection.sql(TRADES_SQL, params=trades_params).pl()
    return ChartData(market, symbol, strategy, prices, segments, trades)


def _check(market: str, strategy: str) -> None:
    if market not in MARKETS:
        raise ValueError(f"unknown market {market!r}; markets: {', '.join(MARKETS)}")
    if strategy not in STRATEGIES:
        raise ValueError(f"unknown strategy {strategy!r}; strategies: {', '.join(STRATEGIES)}")


def draw(data: ChartData) -> Figure:
    """The chart of `data` (a matplotlib Figure, not tied to pyplot's global state)."""
    figure = Figure(figsize=(12, 6.5), layout="constrained")
    axes = figure.add_subplot()
    first: date = data.prices["date"].min()  # type: ignore[assignment]
    last: date = data.prices["date"].max()  # type: ignore[assignment]
    _shade_segments(axes, data.segments, first, last)
    _plot_prices(axes, data.prices)
    _mark_trades(axes, data.trades, first)
    axes.set_xlim(first, last)  # type: ignore[arg-type]
    locator = AutoDateLocator()
    axes.xaxis.set_major_locator(locator)
    axes.xaxis.set_major_formatter(ConciseDateFormatter(locator))
    axes.set_ylabel("close")
    axes.grid(alpha=0.3)
    axes.set_title(
        f"{data.symbol} ({data.market}), {first} to {last}: Bollinger({BOLLINGER_DAYS}, "
        f"{BOLLINGER_WIDTH:g}), trends shaded, {data.strategy} trades"
    )
    figure.legend(loc="outside lower center", fontsize="small", ncols=6)  # off the prices
    return figure


def _shade_segments(axes: Axes, segments: pl.DataFrame, first: date, last: date) -> None:
    """Each trend segment as a band of its direction's colour (labelled once per direction)."""
    labelled: set[str] = set()
    for start, end, trend in segments.iter_rows():
        label = None if trend in labelled else f"trend {trend}"
        labelled.add(trend)
        axes.axvspan(
            max(start, first),
            min(end, last),
            color=SHADES.get(trend, SHADES["neutral"]),
            alpha=0.1,
            linewidth=0,
            label=label,
        )


def _plot_prices(axes: Axes, prices: pl.DataFrame) -> None:
    days = prices["date"].to_list()
    upper, lower = prices["bb_upper"].to_numpy(), prices["bb_lower"].to_numpy()
    axes.fill_between(days, lower, upper, color="#1f77b4", alpha=0.12, label="Bollinger bands")
    axes.plot(
        days,
        prices["bb_middle"].to_numpy(),
        color="#1f77b4",
        linewidth=0.8,
        linestyle="--",
        label="SMA 20 (middle band)",
    )
    for column, label in AVERAGES.items():
        if column != "short_term_average":  # the middle band is that SMA 20 already
            axes.plot(days, prices[column].to_numpy(), linewidth=1.0, label=label)
    axes.plot(days, prices["close"].to_numpy(), color="black", linewidth=1.2, label="close")


def _mark_trades(axes: Axes, trades: pl.DataFrame, first: date) -> None:
    """Entries as up triangles at the entry close, exits as down triangles at the exit close (a
    trade entered before the days shown has its exit only)."""
    closed = trades.filter(pl.col("sell_date").is_not_null())
    trades = trades.filter(pl.col("start_date") >= first)
    axes.scatter(
        trades["start_date"].to_list(),
        trades["start_price"].to_numpy(),
        marker="^",
        s=60,
        color="#2ca02c",
        edgecolors="black",
        zorder=5,
        label="buy",
    )
    axes.scatter(
        closed["sell_date"].to_list(),
        closed["last_price"].to_numpy(),
        marker="v",
        s=60,
        color="#d62728",
        edgecolors="black",
        zorder=5,
        label="sell",
    )


def chart(
    symbol: str,
    market: str = "crypto",
    days: int = DEFAULT_DAYS,
    strategy: str = "aggressive",
    *,
    connection: duckdb.DuckDBPyConnection | None = None,
) -> Figure:
    """The chart of `symbol` over its last `days` days, read from the warehouse of the environment
    (or `connection`, e.g. `open_warehouse(...)` once for many charts). In a notebook the Figure
    displays itself; `figure.savefig("btc.png")` writes it."""
    if connection is not None:
        return draw(load(connection, symbol, market, days, strategy))
    with open_warehouse() as opened:
        return draw(load(opened, symbol, market, days, strategy))
