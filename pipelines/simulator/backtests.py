"""Backtests of a market's daily bars: every strategy over every `years` window, as long frames."""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from functools import cached_property
from typing import TypeVar

import numpy as np
import polars as pl
from numpy.typing import NDArray

from pipelines.catalog import FILLS, STRATEGIES
from pipelines.simulator import metrics
from pipelines.simulator.engine import (
    Costs,
    FlatBars,
    Mask,
    Panel,
    Rows,
    Runs,
    ranks,
    run_tasks,
)
from pipelines.simulator.signals import signals_from_start
from pipelines.simulator.strategies import BY_NAME
from pipelines.simulator.trades import trade_arrays

MAX_YEARS = 20
"""The API's clamp of `years`; longer histories are backtested over at most their last 20 years."""
SIGNAL_COLUMNS: tuple[str, ...] = tuple(
    f"{name}_{side}" for name in STRATEGIES for side in ("entry", "exit")
)
"""The columns of `signals_frame`: per strategy, its entry and exit signal of every bar."""
_Cell = TypeVar("_Cell", bound=np.generic)


@dataclass(frozen=True)
class Prices:
    """OHLC panels (bars x symbols), NaN after each symbol's last bar."""

    high: Panel
    low: Panel
    close: Panel


@dataclass(frozen=True)
class Market:
    """A market's bars sorted by symbol then date, laid end to end (symbol j = segment j)."""

    symbols: list[str]
    bars: FlatBars
    days: Rows
    """Day of every bar, days since 1970-01-01."""

    @property
    def last(self) -> Rows:
        """Each symbol's last row, counted from its first bar."""
        last: Rows = self.bars.length - 1
        return last

    def flat(self, rows: Rows, columns: Rows) -> Rows:
        """Positions in the sorted bars of the rows (from each symbol's first bar) of `columns`."""
        flat: Rows = self.bars.offset[columns] + rows
        return flat

    def dates(self, rows: Rows, columns: Rows) -> pl.Series:
        return _dates(self.days[self.flat(rows, columns)])

    def last_dates(self) -> pl.Series:
        return self.dates(self.last, np.arange(len(self.symbols)))

    @cached_property
    def dividends(self) -> pl.DataFrame:
        """symbol, date, dividend of every bar that is an ex-date (none without dividends)."""
        paid = self.bars.dividend
        empty = {"symbol": pl.String, "date": pl.Date, "dividend": pl.Float64}
        if paid is None or not paid.any():
            return pl.DataFrame(schema=empty)
        rows = np.flatnonzero(paid > 0)
        column = np.searchsorted(self.bars.offset, rows, side="right") - 1
        return pl.DataFrame(
            {
                "symbol": pl.Series(self.symbols, dtype=pl.String).gather(column),
                "date": _dates(self.days[rows]),
                "dividend": paid[rows],
            }
        )

    @cached_property
    def panel_index(self) -> Rows:
        """Position of every sorted bar in a column-major (bars x symbols) panel."""
        columns = np.arange(len(self.symbols)) * self.bars.rows
        index: Rows = np.repeat(columns, self.bars.length) + ranks(self.bars.length)
        return index

    def panel(self, values: Panel) -> Panel:
        """A (bars x symbols) panel of per-bar `values`, column j = symbol j from its first bar,
        NaN after its last."""
        rows, width = self.bars.rows, len(self.symbols)
        if len(values) == rows * width:  # every symbol has every row: a reshape
            by_symbol = values
        else:
            by_symbol = np.full(rows * width, np.nan)
            by_symbol[self.panel_index] = values
        # C order: the indicator kernels step through rows across all symbols
        panel: Panel = np.ascontiguousarray(by_symbol.reshape(width, rows).T)
        return panel

    def unpanel(self, panel: NDArray[_Cell]) -> NDArray[_Cell]:
        """The cells of the sorted bars in a (bars x symbols) panel, in sorted-bar order."""
        by_symbol = np.ravel(panel, order="F")
        if len(by_symbol) == len(self.days):
            return by_symbol
        return by_symbol[self.panel_index]

    @cached_property
    def day_keys(self) -> Rows:
        """(symbol, day) keys of the sorted bars, ascending (`_day_key`)."""
        column = np.repeat(np.arange(len(self.symbols), dtype=np.int64), self.bars.length)
        return _day_key(column, self.days)

    @cached_property
    def prices(self) -> Prices:
        """High, low and close panels, NaN after each symbol's last bar."""
        b = self.bars
        return Prices(high=self.panel(b.high), low=self.panel(b.low), close=self.panel(b.close))


@dataclass(frozen=True)
class Simulation:
    """Every strategy's trades and summaries for every window, and the full-history trades."""

    trades: pl.DataFrame
    summaries: pl.DataFrame
    full_runs: dict[str, pl.DataFrame]
    """Per strategy: the trades of the full-history run filled at the close (for current
    actions), with `column`, `entry_row` and `exit_row` (rows from the symbol's first bar, -1
    while open)."""
    market: Market
    states: pl.DataFrame
    """Per fill, strategy, window and symbol (the summaries' rows): what a resumed run carries on
    from (`pipelines.simulator.resume`): symbol, strategy, fill, years, peak, trough, drawdown,
    run_up, max_close, pending."""


def _dates(days: Rows) -> pl.Series:
    return pl.Series(days).cast(pl.Int32).cast(pl.Date)


def _symbol_starts(symbol: pl.Series) -> Rows:
    """Rows where a run of equal symbols begins."""
    starts: Rows = np.flatnonzero(symbol.ne_missing(symbol.shift(1)).to_numpy())
    return starts


def _is_sorted(bars: pl.DataFrame, starts: Rows) -> bool:
    """Symbols strictly increasing from run to run (so each one run) and days within each run."""
    firsts = bars["symbol"].gather(starts)
    if not bool((firsts.shift(1) < firsts).slice(1).all()):
        return False
    days = bars["date"].cast(pl.Int32).to_numpy()
    later = np.diff(days) > 0
    later[starts[1:] - 1] = True
    return bool(later.all())


def load_market(bars: pl.DataFrame, delisted: Collection[str] = ()) -> Market:
    """The bars (columns symbol, date, high, low, close and, for next-open fills, open; with
    `dividend`, each bar's dividend per unit), any row order, sorted by symbol then date;
    `delisted` names the symbols whose last bar is their last."""
    starts = _symbol_starts(bars["symbol"])
    if not _is_sorted(bars, starts):
        bars = bars.sort("symbol", "date")
        starts = _symbol_starts(bars["symbol"])
    lengths = np.diff(np.append(starts, bars.height)).astype(np.int64)

    def floats(name: str) -> Panel:
        values: Panel = np.ascontiguousarray(bars[name].cast(pl.Float64).to_numpy())
        return values

    symbols = bars["symbol"].gather(starts).to_list()
    gone = set(delisted)
    return Market(
        symbols=symbols,
        bars=FlatBars(
            close=floats("close"),
            high=floats("high"),
            low=floats("low"),
            offset=starts.astype(np.int64),
            length=lengths,
            rows=int(lengths.max(initial=0)),
            open=floats("open") if "open" in bars.columns else None,
            dividend=floats("dividend") if "dividend" in bars.columns else None,
            delisted=np.array([s in gone for s in symbols], np.bool_) if gone else None,
        ),
        days=bars["date"].cast(pl.Int32).to_numpy().astype(np.int64),
    )


def years_available(market: Market) -> Rows:
    """Per symbol: the number of `years` windows, ceil(history in years), at least 1, at most 20."""
    first = market.days[market.bars.offset].astype(float)
    last = market.days[market.flat(market.last, np.arange(len(market.symbols)))].astype(float)
    spans = np.ceil((last - first) / metrics.DAYS_PER_YEAR - 1e-9)
    return np.clip(spans, 1, MAX_YEARS).astype(np.int64)


def window_start(market: Market, years: int) -> Rows:
    """Per symbol: the first row on or after its last day minus `years` calendar years."""
    since = market.last_dates().dt.offset_by(f"-{years}y").cast(pl.Int32).to_numpy()
    # a symbol's days ascend, so its rows before `since` are a prefix: count them by bisection
    # on (symbol, day) keys, which ascend across the whole sorted market
    symbols = np.arange(len(market.symbols), dtype=np.int64)
    found = np.searchsorted(market.day_keys, _day_key(symbols, since.astype(np.int64)))
    start: Rows = found - market.bars.offset
    return start


def _day_key(column: Rows, day: Rows) -> Rows:
    """(symbol, day) as one int64 in their order: the symbol above 32 bits of day (Int32 + 2^31)."""
    key: Rows = (column << 32) + day + (1 << 31)
    return key


def signals_frame(bars: pl.DataFrame, strategies: tuple[str, ...] = STRATEGIES) -> pl.DataFrame:
    """Each strategy's entry and exit signal of every bar, one row per bar of `bars` sorted by symbol
    then date: boolean columns `{strategy}_entry`, `{strategy}_exit` (`SIGNAL_COLUMNS` for all),
    from each symbol's first bar (`pipelines.simulator.signals`)."""
    columns = [f"{name}_{side}" for name in strategies for side in ("entry", "exit")]
    return signals_from_start(bars.sort("symbol", "date")).select(columns)


def simulate(
    bars: pl.DataFrame, costs: Costs, market: str, strategies: tuple[str, ...] = STRATEGIES
) -> Simulation:
    """`simulate_with_signals` on the strategies' signals from each symbol's first bar."""
    ordered = bars.sort("symbol", "date")
    signals = signals_frame(ordered, strategies)
    return simulate_with_signals(ordered, signals, costs, market, strategies)


def simulate_with_signals(
    bars: pl.DataFrame,
    signals: pl.DataFrame,
    costs: Costs,
    market: str,
    strategies: tuple[str, ...] = STRATEGIES,
    fills: tuple[str, ...] = FILLS,
    delisted: Collection[str] = (),
) -> Simulation:
    """Backtest every strategy over `years` = 1..ceil(history) of each symbol (at most 20), with
    its exit rules in `market` (`Strategy.rules`), once per fill of `fills` (next-open fills
    need the bars' `open`).

    `signals` holds `{strategy}_entry` and `{strategy}_exit` booleans (no nulls) for every bar of
    `bars` sorted by symbol then date, row for row (as `signals_frame` returns them). The window of
    `years` starts at the symbol's last day minus that many calendar years; `full_history` marks a
    window that starts on the symbol's first bar (the whole history). A symbol of `delisted` closes
    an open trade at its last bar (`engine.FlatBars.delisted`).
    """
    loaded = load_market(bars, delisted)
    if signals.height != len(loaded.days):
        raise ValueError(f"{signals.height} rows of signals for {len(loaded.days)} bars")
    columns = [f"{name}_{side}" for name in strategies for side in ("entry", "exit")]
    masks = {c: _mask(signals[c]) for c in columns}
    return _simulate(loaded, masks, costs, strategies, market, fills)


def _mask(signal: pl.Series) -> Mask:
    values = signal.to_numpy()
    if values.dtype != np.bool_:
        raise ValueError(f"signal column {signal.name} must be boolean without nulls")
    mask: Mask = values
    return mask


@dataclass(frozen=True)
class _Windows:
    """The `years` windows of every symbol and the engine runs (tasks) they need."""

    years: Rows
    """(windows,) 1..the largest number of windows."""
    kept: Mask
    """(windows, symbols): the symbol has this window."""
    task: Rows
    """(windows, symbols): the run of that window (windows starting on the same row share it)."""
    full: Rows
    """(symbols,): the full-history run."""
    column: Rows
    """(tasks,): the symbol of each run."""
    start: Rows
    """(tasks,): the first row of each run."""
    first_row: Rows
    """(windows, symbols): the window's first row."""


def _windows(market: Market) -> _Windows:
    available = years_available(market)
    width = len(market.symbols)
    years = np.arange(1, int(available.max(initial=1)) + 1)
    starts = np.stack([window_start(market, int(y)) for y in years]).reshape(len(years), width)
    kept = available[None, :] >= years[:, None]
    columns = np.broadcast_to(np.arange(width), starts.shape)
    # one run per distinct (symbol, first row); the full history is the run from row 0
    stride = market.bars.rows + 1
    keys = np.concatenate([(columns * stride + starts)[kept], np.arange(width) * stride])
    unique, inverse = np.unique(keys, return_inverse=True)
    task = np.zeros(starts.shape, np.int64)
    task[kept] = inverse[: int(kept.sum())]
    return _Windows(
        years=years,
        kept=kept,
        task=task,
        full=inverse[int(kept.sum()) :],
        column=unique // stride,
        start=unique % stride,
        first_row=starts,
    )


def _simulate(
    market: Market,
    signals: dict[str, Mask],
    costs: Costs,
    strategies: tuple[str, ...],
    market_name: str,
    fills: tuple[str, ...],
) -> Simulation:
    windows = _windows(market)
    all_trades, all_summaries, all_states = [], [], []
    full_runs: dict[str, pl.DataFrame] = {}
    for fill in fills:
        for name in strategies:
            runs = run_tasks(
                market.bars,
                signals[f"{name}_entry"],
                signals[f"{name}_exit"],
                windows.column,
                windows.start,
                BY_NAME[name].rules(market_name),
                costs,
                fill=fill,
            )
            trades = _trade_frame(market, runs, windows.column, fill)
            labels = {"strategy": pl.lit(name, pl.String), "fill": pl.lit(fill, pl.String)}
            all_trades.append(_window_trades(trades, runs, windows).with_columns(**labels))
            summaries = _summary_frame(market, runs, trades, windows, costs)
            all_summaries.append(summaries.with_columns(**labels))
            all_states.append(_state_frame(market, runs, windows).with_columns(**labels))
            if fill == "close":
                full_runs[name] = _gather(trades, runs, windows.full)
    return Simulation(
        trades=pl.concat(all_trades, how="vertical_relaxed"),
        summaries=pl.concat(all_summaries, how="vertical_relaxed"),
        full_runs=full_runs,
        market=market,
        states=pl.concat(all_states, how="vertical_relaxed"),
    )


def _state_frame(market: Market, runs: Runs, windows: _Windows) -> pl.DataFrame:
    """Each window's carried state at its symbol's last bar (window by window, symbols in order)."""
    window, column = np.nonzero(windows.kept)
    task = windows.task[window, column]
    traded = runs.count[task] > 0
    first_trade = np.where(traded, runs.first[task], 0)
    entry_row = runs.trades.entry_row[first_trade] if len(runs.trades.entry_row) else first_trade
    return pl.DataFrame(
        {
            "first_entry": pl.select(
                pl.when(pl.Series(traded)).then(
                    market.dates(np.where(traded, entry_row, 0), column)
                )
            ).to_series(),
            "symbol": pl.Series(market.symbols, dtype=pl.String).gather(column),
            "years": pl.Series(windows.years[window], dtype=pl.Int32),
            "peak": runs.peak[task],
            "trough": runs.trough[task],
            "drawdown": runs.drawdown[task],
            "run_up": runs.run_up[task],
            "max_close": runs.max_close[task],
            "pending": pl.Series(runs.pending[task], dtype=pl.Int32),
        }
    )


def _trade_frame(market: Market, runs: Runs, task_column: Rows, fill: str) -> pl.DataFrame:
    """One row per trade of `runs`, task by task: `backtest_trades` but the window's labels."""
    arrays = trade_arrays(runs, task_column, market.bars, fill)
    col = arrays["column"].to_numpy()
    start = market.dates(arrays["entry_row"].to_numpy(), col)
    marked = market.dates(arrays["mark_row"].to_numpy(), col)
    closed = arrays["closed"]
    return arrays.with_columns(
        symbol=pl.Series(market.symbols, dtype=pl.String).gather(col),
        action=pl.when(closed).then(pl.lit("Sell")).otherwise(pl.lit("Buy")),
        start_date=start,
        sell_date=pl.when(closed).then(marked),
        days_in_trade=(marked - start).dt.total_days().cast(pl.Int32),
    )


def _gather(trades: pl.DataFrame, runs: Runs, tasks: Rows) -> pl.DataFrame:
    """The trades of `tasks`, task after task."""
    count = runs.count[tasks]
    return trades[np.repeat(runs.first[tasks], count) + ranks(count)]


def _window_trades(trades: pl.DataFrame, runs: Runs, windows: _Windows) -> pl.DataFrame:
    """Every window's trades (window by window, symbols in order), labelled with the window."""
    tasks = windows.task[windows.kept]
    count = runs.count[tasks]
    window = np.repeat(np.nonzero(windows.kept)[0], count)
    return _gather(trades, runs, tasks).with_columns(
        full_history=pl.Series(np.repeat(windows.first_row[windows.kept] == 0, count)),
        years=pl.Series(windows.years[window], dtype=pl.Int32),
    )


def _summary_frame(
    market: Market,
    runs: Runs,
    trades: pl.DataFrame,
    windows: _Windows,
    costs: Costs,
) -> pl.DataFrame:
    """One summary per window and symbol (window by window, symbols in order)."""
    window, column = np.nonzero(windows.kept)
    task = windows.task[window, column]
    start = windows.first_row[window, column]
    close = market.bars.close
    spans = pl.DataFrame(
        {
            "symbol": pl.Series(market.symbols, dtype=pl.String).gather(column),
            "start_date": market.dates(start, column),
            "end_date": market.last_dates().gather(column),
        }
    )
    equity = metrics.equity_frame(
        final=runs.final[task],
        run_up=runs.run_up[task],
        drawdown=runs.drawdown[task],
        first_close=close[market.flat(start, column)],
        last_close=close[market.flat(market.last[column], column)],
        initial=costs.initial_investment,
        dividends=metrics.window_dividends(market.dividends, spans),
    ).with_columns(
        *spans.get_columns(),
        column=pl.Series(column),
        task=pl.Series(task),
        full_history=pl.Series(start == 0),
        years=pl.Series(windows.years[window], dtype=pl.Int32),
    )
    by_task = metrics.trade_metrics(trades.with_columns(task=pl.Series(runs.trades.task)), "task")
    return metrics.summaries(equity, by_task, on="task")
