"""The numpy engine and backtests the compiled ones replaced: the oracle they must equal bit for bit."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import polars as pl

from pipelines.indicators.panel import to_panels
from pipelines.simulator.backtests import Prices
from pipelines.simulator.engine import (
    EXIT_REASONS,
    NO_EXIT,
    SIGNAL,
    STOP_LOSS,
    TAKE_PROFIT,
    TRAILING_STOP,
    Costs,
    ExitRules,
    Fills,
    Mask,
    Panel,
    Result,
    Rows,
)
from pipelines.simulator.strategies import BY_NAME
from tests.pipelines.simulator.numpy_signals import NUMPY_SIGNALS, Signals

DAYS_PER_YEAR = 365.25
MAX_YEARS = 20
_NO_DAY = np.iinfo(np.int64).max


# The engine: one loop over bars, numpy operations across symbols.


@dataclass
class _State:
    cash: Panel
    units: Panel
    start_price: Panel
    max_close: Panel
    highest: Panel
    lowest: Panel
    in_position: Mask


def _fills(parts: list[tuple[int, Rows, Panel, Panel, Panel, Rows, Panel, Panel]]) -> Fills:
    if not parts:
        empty_i = np.empty(0, np.int64)
        empty_f = np.empty(0)
        return Fills(empty_i, empty_i, empty_f, empty_f, empty_f, empty_i, empty_f, empty_f)
    rows = np.concatenate([np.full(len(p[1]), p[0], np.int64) for p in parts])
    cols = [np.concatenate([p[k] for p in parts]) for k in range(1, 8)]
    return Fills(rows, *cols)


def _exit_codes(state: _State, close: Panel, exit_signal: Mask, rules: ExitRules) -> Rows:
    """The exit reason of every symbol at this bar's close (NO_EXIT where none fires)."""
    held = state.in_position
    conditions = [
        held & (close <= state.start_price * (1.0 - rules.stop_loss))
        if rules.stop_loss is not None
        else np.zeros_like(held),
        held & (close <= state.max_close * (1.0 - rules.trailing_stop))
        if rules.trailing_stop is not None
        else np.zeros_like(held),
        held & (close >= state.start_price * (1.0 + rules.take_profit))
        if rules.take_profit is not None
        else np.zeros_like(held),
        held & exit_signal,
    ]
    codes: Rows = np.select(conditions, [STOP_LOSS, TRAILING_STOP, TAKE_PROFIT, SIGNAL], NO_EXIT)
    return codes


def backtest(
    close: Panel,
    high: Panel,
    low: Panel,
    entry: Mask,
    exit_signal: Mask,
    start: Rows,
    rules: ExitRules,
    costs: Costs,
) -> Result:
    """Run every symbol's long-only state machine from its `start` row to its last bar.

    At each bar's close, a held position exits if a rule or the exit signal fires; otherwise a flat
    symbol with an entry signal buys with all its cash. One action per symbol and bar: a symbol that
    exits on a bar does not re-enter on it. Signals before `start` are ignored.
    """
    rows, width = close.shape
    state = _State(
        cash=np.full(width, costs.initial_investment),
        units=np.zeros(width),
        start_price=np.full(width, np.nan),
        max_close=np.full(width, np.nan),
        highest=np.full(width, np.nan),
        lowest=np.full(width, np.nan),
        in_position=np.zeros(width, bool),
    )
    equity = np.full((rows, width), np.nan)
    entries: list[tuple[int, Rows, Panel, Panel, Panel, Rows, Panel, Panel]] = []
    exits: list[tuple[int, Rows, Panel, Panel, Panel, Rows, Panel, Panel]] = []
    first = int(start.min()) if width else rows
    for t in range(first, rows):
        c = close[t]
        live = (t >= start) & ~np.isnan(c)
        held = state.in_position
        np.fmax(state.highest, np.where(held, high[t], np.nan), out=state.highest)
        np.fmin(state.lowest, np.where(held, low[t], np.nan), out=state.lowest)
        np.fmax(state.max_close, np.where(held, c, np.nan), out=state.max_close)
        codes = _exit_codes(state, c, exit_signal[t], rules)
        leaving = np.flatnonzero(codes)
        if len(leaving):
            exits.append(_exit(state, t, leaving, c, codes, costs))
        entering = np.flatnonzero(live & ~state.in_position & (codes == NO_EXIT) & entry[t])
        if len(entering):
            entries.append(_enter(state, t, entering, c, high[t], low[t], costs))
        equity[t] = np.where(live, state.cash + state.units * c, np.nan)
    return Result(
        entries=_fills(entries),
        exits=_fills(exits),
        equity=equity,
        in_position=state.in_position.copy(),
        highest=state.highest.copy(),
        lowest=state.lowest.copy(),
    )


def _exit(
    state: _State, t: int, cols: Rows, close: Panel, codes: Rows, costs: Costs
) -> tuple[int, Rows, Panel, Panel, Panel, Rows, Panel, Panel]:
    """Sell every unit of `cols` at this close less slippage, paying the fee on the proceeds."""
    price = close[cols] * (1.0 - costs.slippage)
    units = state.units[cols]
    gross = units * price
    fee = gross * costs.fee
    record = (t, cols, price, units, fee, codes[cols], state.highest[cols], state.lowest[cols])
    state.cash[cols] = gross - fee
    state.units[cols] = 0.0
    state.in_position[cols] = False
    for field in (state.start_price, state.max_close, state.highest, state.lowest):
        field[cols] = np.nan
    return record


def _enter(
    state: _State, t: int, cols: Rows, close: Panel, high: Panel, low: Panel, costs: Costs
) -> tuple[int, Rows, Panel, Panel, Panel, Rows, Panel, Panel]:
    """Buy with all the cash of `cols` at this close plus slippage, the fee included in the spend."""
    price = close[cols] * (1.0 + costs.slippage)
    units = state.cash[cols] / (price * (1.0 + costs.fee))
    fee = units * price * costs.fee
    state.cash[cols] = 0.0
    state.units[cols] = units
    state.in_position[cols] = True
    state.start_price[cols] = close[cols]
    state.max_close[cols] = close[cols]
    state.highest[cols] = high[cols]
    state.lowest[cols] = low[cols]
    nan = np.full(len(cols), np.nan)
    return (t, cols, price, units, fee, np.zeros(len(cols), np.int64), nan, nan)


# The metrics.


def _at(panel: Panel, rows: Rows) -> Panel:
    at: Panel = panel[rows, np.arange(panel.shape[1])]
    return at


def equity_metrics(
    equity: Panel, close: Panel, start: Rows, last: Rows, initial: float
) -> pl.DataFrame:
    """Per panel column: final value, buy-and-hold, peak profit (max run-up %) and peak loss
    (max drawdown %, <= 0) of the equity curve between `start` and `last` rows."""
    with np.errstate(invalid="ignore", divide="ignore"):
        peak = np.fmax.accumulate(equity, axis=0)
        trough = np.fmin.accumulate(equity, axis=0)
        drawdown = np.nanmin(np.where(np.isnan(equity), np.inf, equity / peak - 1.0), axis=0)
        run_up = np.nanmax(np.where(np.isnan(equity), -np.inf, equity / trough - 1.0), axis=0)
    final = _at(equity, last)
    return pl.DataFrame(
        {
            "column": np.arange(equity.shape[1]),
            "final_value": final,
            "initial_investment": np.full(equity.shape[1], initial),
            "total_profit": final - initial,
            "profit_percent": 100.0 * (final / initial - 1.0),
            "buy_and_hold_profit_percent": 100.0 * (_at(close, last) / _at(close, start) - 1.0),
            "peak_profit": 100.0 * run_up,
            "peak_loss": 100.0 * drawdown,
        }
    )


def trade_metrics(trades: pl.DataFrame) -> pl.DataFrame:
    """Per `column`: counts and averages over CLOSED trades (`profit` > 0 counts as profitable)."""
    won, lost = pl.col("profit") > 0, pl.col("profit") <= 0
    return (
        trades.filter("closed")
        .group_by("column")
        .agg(
            total_trades=pl.len(),
            profitable_trades=won.sum(),
            unprofitable_trades=lost.sum(),
            average_profit=pl.col("profit").filter(won).mean(),
            average_profit_percent=pl.col("profit_percent").filter(won).mean(),
            average_loss=pl.col("profit").filter(lost).mean(),
            average_loss_percent=pl.col("profit_percent").filter(lost).mean(),
            average_trade_duration=pl.col("days_in_trade").mean(),
        )
    )


def summaries(equity_part: pl.DataFrame, trade_part: pl.DataFrame) -> pl.DataFrame:
    """Join both parts; durations and rates from `start_date`/`end_date` present in `equity_part`."""
    counts = ["total_trades", "profitable_trades", "unprofitable_trades"]
    joined = equity_part.join(trade_part, on="column", how="left").with_columns(
        pl.col(counts).fill_null(0).cast(pl.Int32)
    )
    duration = (pl.col("end_date") - pl.col("start_date")).dt.total_days()
    growth = pl.col("final_value") / pl.col("initial_investment")
    return joined.with_columns(
        backtest_duration=duration.cast(pl.Int32),
        annualized_return=pl.when(duration > 0).then(
            100.0 * (growth ** (DAYS_PER_YEAR / duration) - 1.0)
        ),
        profitable_trade_percent=pl.when(pl.col("total_trades") > 0).then(
            100.0 * pl.col("profitable_trades") / pl.col("total_trades")
        ),
    )


# The trades.


def _by_symbol(fills: Fills) -> Rows:
    order: Rows = np.lexsort((fills.row, fills.column))
    return order


def _take(fills: Fills, order: Rows) -> Fills:
    return Fills(*(getattr(fills, f)[order] for f in Fills.__dataclass_fields__))


def trade_arrays(result: Result, close: Panel, last_row: Rows) -> pl.DataFrame:
    """One row per trade: `column`, `entry_row`, `exit_row` (-1 while open) and the Trade numbers.

    Entries and exits alternate per symbol, so after sorting both by (symbol, bar) the k-th exit
    closes the k-th entry; a symbol still in position at its last bar has one entry more (open).
    """
    entries = _take(result.entries, _by_symbol(result.entries))
    exits = _take(result.exits, _by_symbol(result.exits))
    n = len(entries.row)
    is_last = np.ones(n, bool)
    if n:
        is_last[:-1] = entries.column[:-1] != entries.column[1:]
    is_open = is_last & result.in_position[entries.column]
    closed = ~is_open
    col = entries.column
    exit_row = np.full(n, -1, np.int64)
    exit_row[closed] = exits.row
    mark_row = np.where(closed, exit_row, last_row[col])

    def with_exits(values: Panel, open_values: Panel) -> Panel:
        out = np.array(open_values, dtype=np.float64)
        out[closed] = values
        return out

    exit_price = with_exits(exits.price, np.full(n, np.nan))
    exit_fee = with_exits(exits.fee, np.zeros(n))
    last_price = close[mark_row, col] if n else np.empty(0)
    fees = entries.fee + exit_fee
    value = np.where(closed, exit_price, last_price)
    profit = entries.units * (value - entries.price) - fees
    spent = entries.units * entries.price + entries.fee
    reasons = np.full(n, None, dtype=object)
    reasons[closed] = [EXIT_REASONS[int(c)] for c in exits.reason]
    return pl.DataFrame(
        {
            "column": col,
            "entry_row": entries.row,
            "exit_row": exit_row,
            "mark_row": mark_row,
            "closed": closed,
            "exit_reason": pl.Series(reasons.tolist(), dtype=pl.String),
            "start_price": close[entries.row, col] if n else np.empty(0),
            "entry_price": entries.price,
            "exit_price": pl.Series(exit_price, nan_to_null=True),
            "last_price": last_price,
            "highest_price": with_exits(exits.highest, result.highest[col]),
            "lowest_price": with_exits(exits.lowest, result.lowest[col]),
            "units": entries.units,
            "fees": fees,
            "profit": profit,
            "profit_percent": 100.0 * profit / spent,
        }
    )


# The backtests over every window.


@dataclass(frozen=True)
class Market:
    """A market's bars as panels (column j = symbol j from its first bar) with their days."""

    symbols: list[str]
    prices: Prices
    days: Rows
    """(bars, symbols) days since 1970-01-01; `_NO_DAY` after a symbol's last bar."""
    last: Rows
    """Each symbol's last row."""

    def dates(self, rows: Rows, columns: Rows) -> pl.Series:
        return pl.Series(self.days[rows, columns]).cast(pl.Int32).cast(pl.Date)

    def last_dates(self) -> pl.Series:
        return self.dates(self.last, np.arange(len(self.symbols)))


@dataclass(frozen=True)
class Simulation:
    """Every strategy's trades and summaries for every window, and the full-history runs."""

    trades: pl.DataFrame
    summaries: pl.DataFrame
    full_runs: dict[str, tuple[Result, pl.DataFrame]]
    """Per strategy: the full-history run and its trades (for current actions)."""
    market: Market


def load_market(bars: pl.DataFrame) -> Market:
    """Panels of `bars` (columns symbol, date, open, high, low, close, volume), any row order."""
    bars = bars.sort("symbol", "date")
    p = to_panels(bars, ("symbol",))
    days = np.full(p.close.shape, _NO_DAY, np.int64)
    column = np.repeat(np.arange(len(p.lengths)), p.lengths)
    row = np.arange(bars.height) - np.repeat(np.cumsum(p.lengths) - p.lengths, p.lengths)
    days[row, column] = bars["date"].cast(pl.Int32).to_numpy()
    return Market(
        symbols=p.keys["symbol"].to_list(),
        prices=Prices(high=p.high, low=p.low, close=p.close),
        days=days,
        last=p.lengths - 1,
    )


def years_available(market: Market) -> Rows:
    """Per symbol: the number of `years` windows, ceil(history in years), at least 1, at most 20."""
    first = market.days[0].astype(float)
    last = market.days[market.last, np.arange(len(market.symbols))].astype(float)
    spans = np.ceil((last - first) / DAYS_PER_YEAR - 1e-9)
    return np.clip(spans, 1, MAX_YEARS).astype(np.int64)


def window_start(market: Market, years: int) -> Rows:
    """Per symbol: the first row on or after its last day minus `years` calendar years."""
    since = market.last_dates().dt.offset_by(f"-{years}y").cast(pl.Int32).to_numpy()
    start: Rows = (market.days < since[None, :]).sum(axis=0)
    return start


def _trade_frame(market: Market, result: Result) -> pl.DataFrame:
    close = market.prices.close
    arrays = trade_arrays(result, close, market.last)
    col = arrays["column"].to_numpy()
    start = market.dates(arrays["entry_row"].to_numpy(), col)
    marked = market.dates(arrays["mark_row"].to_numpy(), col)
    closed = arrays["closed"]
    return arrays.with_columns(
        symbol=pl.Series([market.symbols[j] for j in col], dtype=pl.String),
        action=pl.when(closed).then(pl.lit("Sell")).otherwise(pl.lit("Buy")),
        start_date=start,
        sell_date=pl.when(closed).then(marked),
        days_in_trade=(marked - start).dt.total_days().cast(pl.Int32),
    )


def _summary_frame(
    market: Market, result: Result, trades: pl.DataFrame, start: Rows, costs: Costs
) -> pl.DataFrame:
    close: Panel = market.prices.close
    columns = np.arange(len(market.symbols))
    equity = equity_metrics(
        result.equity, close, start, market.last, costs.initial_investment
    ).with_columns(
        symbol=pl.Series(market.symbols, dtype=pl.String),
        start_date=market.dates(start, columns),
        end_date=market.last_dates(),
    )
    return summaries(equity, trade_metrics(trades))


def run_window(
    market: Market, rules: ExitRules, signals: Signals, start: Rows, costs: Costs
) -> tuple[Result, pl.DataFrame, pl.DataFrame]:
    """One engine run of a strategy's `rules` from the `start` rows: the result, its trades and
    summaries."""
    p = market.prices
    result = backtest(p.close, p.high, p.low, signals.entry, signals.exit, start, rules, costs)
    trades = _trade_frame(market, result)
    return result, trades, _summary_frame(market, result, trades, start, costs)


def simulate(
    bars: pl.DataFrame, costs: Costs, market_name: str, strategies: tuple[str, ...]
) -> Simulation:
    """Backtest every strategy over `years` = 1..ceil(history) of each symbol (at most 20).

    The window of `years` starts at the symbol's last day minus that many calendar years;
    `full_history` marks a window that starts on the symbol's first bar (the whole history).
    """
    market = load_market(bars)
    available = years_available(market)
    all_trades, all_summaries = [], []
    full_runs: dict[str, tuple[Result, pl.DataFrame]] = {}
    for name in strategies:
        rules = BY_NAME[name].rules(market_name)
        signals = NUMPY_SIGNALS[name](market.prices)
        for years in range(1, int(available.max(initial=1)) + 1):
            start = window_start(market, years)
            _, trades, summaries = run_window(market, rules, signals, start, costs)
            keep = pl.Series(available >= years)
            window = {"strategy": name, "years": years}
            all_trades.append(_label(trades, keep, window, start == 0))
            all_summaries.append(_label(summaries, keep, window, start == 0))
            if years == 1:
                zero = np.zeros(len(market.symbols), np.int64)
                full_runs[name] = run_window(market, rules, signals, zero, costs)[:2]
    return Simulation(
        trades=pl.concat(all_trades, how="vertical_relaxed"),
        summaries=pl.concat(all_summaries, how="vertical_relaxed"),
        full_runs=full_runs,
        market=market,
    )


def _label(
    frame: pl.DataFrame, keep: pl.Series, window: dict[str, object], full: Rows
) -> pl.DataFrame:
    """Rows of the symbols that have this window, labelled with strategy, years and full_history."""
    by_column = pl.DataFrame({"column": np.arange(len(keep)), "_keep": keep, "full_history": full})
    return (
        frame.join(by_column, on="column", how="left")
        .filter("_keep")
        .drop("_keep")
        .with_columns(
            strategy=pl.lit(window["strategy"], pl.String),
            years=pl.lit(window["years"], pl.Int32),
        )
    )
