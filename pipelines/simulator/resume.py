"""Backtest windows carried on from their stored state over a symbol's new bars, instead of replayed.

A window of `years` starts flat, with the initial investment, on the first bar on or after the
symbol's last day minus `years` years, so a new day moves its start. Until the window's first
trade, a run is flat with its initial cash whatever bar it started on: a run from the old start
and one from the new start are in the same state at every bar from the new start on, bit for bit,
as long as the new start is a flat bar too. Its equity is then the initial cash, which both runs'
curves have seen, so the flat bars before it do not move the curve's running figures. So while
the new start bar is strictly before the window's first entry, the window is its stored trades
and state carried over the new bars (`engine.resume_tasks`, the same per-bar arithmetic as a
replay), with only the start's labels moved. A start on the entry's own bar is not: a run from
there never sees the initial cash (its first equity is the position, less the entry's fees and
slippage), so its peak, trough and drawdown differ from a run that was flat before. A window whose
start reaches its first entry, a new window (the history reached one more year), or a symbol
without carried state is replayed from its bars instead (`update.py`).

What a window carries: its open trade (the position), its summary (the final value is the cash
when flat; the closed trades' figures stand until a trade closes) and `backtest_state` (the
curve's running figures, the highest close since the open trade's entry, the first trade's day
and, for next-open fills, the order the last bar placed, which fills at the first new bar's open).
A window with a pending entry is carried on only while its new start is on or before the bar that
placed it: a start after it would not have seen the signal.
A carried-on window's closed trades are not read: its rows of `backtest_trades` change only where
the open trade is, or a trade starts.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta

import numpy as np
import polars as pl
from numpy.typing import NDArray

from pipelines.simulator import metrics, scoring
from pipelines.simulator.backtests import MAX_YEARS
from pipelines.simulator.engine import ENTRY, Carried, Costs, FlatBars, Runs, resume_tasks
from pipelines.simulator.strategies import BY_NAME
from pipelines.simulator.trades import REASONS, last_prices, money

TRADE_FIGURES = [
    "total_trades",
    "profitable_trades",
    "unprofitable_trades",
    "average_profit",
    "average_profit_percent",
    "average_loss",
    "average_loss_percent",
    "average_trade_duration",
]
"""Summary columns from a window's closed trades (`metrics.trade_metrics`)."""
START_SEARCH = timedelta(days=31)
"""How far after a window's earliest day its first bar is looked for; a longer gap replays it."""
WINDOW = ["symbol", "strategy", "fill", "years"]


@dataclass(frozen=True)
class Stored:
    """What the shard holds of the symbols that may be carried on: their summaries, their windows'
    state and their open trades (`action` Buy)."""

    summaries: pl.DataFrame
    states: pl.DataFrame
    open_trades: pl.DataFrame


def windows(stored: Stored, prices: pl.DataFrame) -> pl.DataFrame:
    """Every stored window of the symbols with its new earliest day (`since`: the new last day
    minus `years` years, as `backtests.window_start` counts) and whether each window of its
    symbol can be carried on (`carried`; `start_bars` checks the new first bars too)."""
    span = (pl.col("last_date") - pl.col("first_date")).dt.total_days().cast(pl.Float64)
    available = (span / metrics.DAYS_PER_YEAR - 1e-9).ceil().clip(1, MAX_YEARS).cast(pl.Int32)
    has_state = stored.states.select(*WINDOW, "first_entry", "pending").with_columns(
        has_state=pl.lit(True)
    )
    joined = (
        stored.summaries.join(prices.select("symbol", "first_date", "last_date"), on="symbol")
        .join(has_state, on=WINDOW, how="left")
        .with_columns(
            since=pl.col("last_date").dt.offset_by(pl.format("-{}y", pl.col("years"))),
            stored_windows=pl.col("years").max().over("symbol", "strategy", "fill"),
            available=available,
        )
    )
    longest = pl.col("years") == pl.col("stored_windows")
    ok = (
        pl.col("has_state").fill_null(False)
        & (pl.col("stored_windows") == pl.col("available"))
        # the start must be a flat bar: `start_bars` asks it of the start bar itself too (a
        # `since` on a weekend starts on the Monday, which may be the entry's day)
        & (pl.col("first_entry").is_null() | (pl.col("since") < pl.col("first_entry")))
        # the longest window is the whole history (so its run also gives the current action)
        & (~longest | (pl.col("since") <= pl.col("first_date")))
    )
    return joined.with_columns(carried=ok.all().over("symbol"))


def start_bars(windows: pl.DataFrame, bars: pl.DataFrame) -> pl.DataFrame:
    """The windows of the symbols every window of which has a new first bar (`start_date`,
    `first_close`): the first bar on or after `since` (or the symbol's first bar) within
    START_SEARCH, which keeps the window's `full_history` and is strictly before the window's
    first entry (and, for a pending entry, on or before the bar that placed it)."""
    wanted = windows.with_columns(_from=pl.max_horizontal("since", "first_date")).sort("_from")
    found = wanted.join_asof(
        bars.select("symbol", _start="date", _first_close="close").sort("_start"),
        left_on="_from",
        right_on="_start",
        by="symbol",
        strategy="forward",
        tolerance=START_SEARCH,
        check_sortedness=False,  # sorted as a whole, so within each symbol too
    )
    # a window whose start leaves the first bar relabels its closed trades: replayed instead
    same = (pl.col("_start") == pl.col("first_date")) == pl.col("full_history")
    # a start on the first entry's bar never saw the flat equity the carried curve did
    # a start after the bar of a pending entry would not have seen its signal
    unplaced = (pl.col("pending") != ENTRY) | (pl.col("_start") <= pl.col("end_date"))
    flat_start = (pl.col("first_entry").is_null() & unplaced) | (
        pl.col("_start") < pl.col("first_entry")
    )
    whole = (pl.col("_start").is_not_null() & same & flat_start).all().over("symbol")
    return (
        found.filter(whole)
        .drop("_from", "start_date")
        .rename({"_start": "start_date", "_first_close": "first_close"})
    )


def day_filter(windows: pl.DataFrame) -> pl.Expr:
    """The days `start_bars` looks at: from each `since` on for START_SEARCH, and first days."""
    near = [
        pl.col("date").is_between(day, day + START_SEARCH)
        for day in windows["since"].unique().sort().to_list()
    ]
    firsts = pl.col("date").is_in(windows["first_date"].unique().implode())
    rule = firsts
    for condition in near:
        rule = rule | condition
    return rule


@dataclass(frozen=True)
class Resumed:
    """The carried windows' rows, as a replay would write them."""

    trades: pl.DataFrame
    """The trades the new bars touched: each window's open trade, and those entered since."""
    dropped: pl.DataFrame
    """Keys (symbol, strategy, years, start_date) of the stored open trades `trades` replace."""
    summaries: pl.DataFrame
    actions: pl.DataFrame
    states: pl.DataFrame


ClosedTrades = Callable[[list[str]], pl.DataFrame]
"""The stored closed trades of some symbols (what a window's figures are recomputed from)."""


def resume(
    windows: pl.DataFrame,
    stored: Stored,
    new_bars: pl.DataFrame,
    new_signals: pl.DataFrame,
    costs: Costs,
    market: str,
    closed_trades: ClosedTrades,
    paid: pl.DataFrame,
) -> Resumed:
    """The carried windows (from `start_bars`) over their symbols' new bars: `new_bars` (symbol,
    date, open, close, high, low, dividend) and `new_signals` (the strategies' columns), row for
    row, by symbol then date, with the strategies' exit rules in `market`; `paid` (symbol, date,
    dividend) holds every ex-date of the symbols, for the windows' buy-and-hold."""
    symbols = windows["symbol"].unique().sort()
    bars = _flat(new_bars, symbols)
    runs = windows.select("fill", "strategy").unique().sort("fill", "strategy").rows()
    done = [
        _strategy(
            windows.filter((pl.col("strategy") == name) & (pl.col("fill") == fill)).sort(WINDOW),
            stored,
            new_bars,
            new_signals,
            bars,
            symbols,
            (name, fill),
            costs,
            market,
            paid,
        )
        for fill, name in runs
    ]
    trades = pl.concat([d.trades for d in done])
    numbered = pl.concat([d.equity for d in done]).with_columns(
        task=pl.int_range(pl.len(), dtype=pl.Int64)
    )
    last = new_bars.group_by("symbol", maintain_order=True).agg(date=pl.col("date").last())
    at_close = windows.filter(pl.col("fill") == "close")
    longest = at_close.filter(pl.col("years") == pl.col("years").max().over("symbol", "strategy"))
    whole = trades.join(longest.select(WINDOW), on=WINDOW, how="semi")
    full_runs = {
        name: whole.filter(pl.col("strategy") == name)
        for name in windows["strategy"].unique().sort().to_list()
    }
    return Resumed(
        trades=trades.drop("closed"),
        dropped=stored.open_trades.select(*WINDOW, "start_date").join(
            windows.select(WINDOW), on=WINDOW, how="semi"
        ),
        summaries=_summaries(numbered, trades, closed_trades),
        actions=scoring.current_actions(full_runs, last),
        states=pl.concat([d.states for d in done]),
    )


@dataclass(frozen=True)
class _Done:
    trades: pl.DataFrame
    equity: pl.DataFrame
    states: pl.DataFrame


def _flat(new_bars: pl.DataFrame, symbols: pl.Series) -> FlatBars:
    lengths = (
        pl.DataFrame({"symbol": symbols})
        .join(new_bars.group_by("symbol").len(), on="symbol", how="left", maintain_order="left")[
            "len"
        ]
        .fill_null(0)
        .to_numpy()
        .astype(np.int64)
    )
    offset = np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(np.int64)

    def floats(name: str) -> np.ndarray:
        return np.ascontiguousarray(new_bars[name].cast(pl.Float64).to_numpy())

    return FlatBars(
        close=floats("close"),
        high=floats("high"),
        low=floats("low"),
        offset=offset,
        length=lengths,
        rows=int(lengths.max(initial=0)),
        open=floats("open"),
        dividend=floats("dividend") if "dividend" in new_bars.columns else None,
    )


def _strategy(
    mine: pl.DataFrame,
    stored: Stored,
    new_bars: pl.DataFrame,
    new_signals: pl.DataFrame,
    bars: FlatBars,
    symbols: pl.Series,
    run: tuple[str, str],
    costs: Costs,
    market: str,
    paid: pl.DataFrame,
) -> _Done:
    """One strategy's carried windows of one fill (`run`: strategy, fill; `mine`, sorted by
    symbol and years) in `market`."""
    name, fill = run
    column = (
        mine.select("symbol")
        .join(
            pl.DataFrame({"symbol": symbols, "_column": np.arange(len(symbols))}),
            on="symbol",
            maintain_order="left",
        )["_column"]
        .to_numpy()
        .astype(np.int64)
    )
    open_trades = mine.select(WINDOW).join(
        stored.open_trades, on=WINDOW, how="left", maintain_order="left"
    )
    state = mine.select(WINDOW).join(stored.states, on=WINDOW, how="left", maintain_order="left")
    held = open_trades["start_date"].is_not_null().to_numpy()
    nan = np.full(len(held), np.nan)

    def values(frame: pl.DataFrame, column_name: str) -> NDArray[np.float64]:
        found: NDArray[np.float64] = (
            frame[column_name].cast(pl.Float64).fill_null(np.nan).to_numpy()
        )
        return found

    carried = Carried(
        held=held,
        cash=np.where(held, values(open_trades, "dividends"), values(mine, "final_value")),
        units=np.where(held, values(open_trades, "units"), 0.0),
        start_price=np.where(held, values(open_trades, "start_price"), nan),
        max_close=values(state, "max_close"),
        highest=np.where(held, values(open_trades, "highest_price"), nan),
        lowest=np.where(held, values(open_trades, "lowest_price"), nan),
        peak=values(state, "peak"),
        trough=values(state, "trough"),
        drawdown=values(state, "drawdown"),
        run_up=values(state, "run_up"),
        pending=state["pending"].cast(pl.Int64).to_numpy(),
    )
    runs = resume_tasks(
        bars,
        new_signals[f"{name}_entry"].to_numpy(),
        new_signals[f"{name}_exit"].to_numpy(),
        column,
        carried,
        BY_NAME[name].rules(market),
        costs,
        fill,
    )
    trades = _trade_rows(runs, mine, open_trades, new_bars, bars, column, fill)
    last_row = bars.offset[column] + bars.length[column] - 1
    end_date = new_bars["date"].gather(last_row)
    spans = mine.select("symbol", "start_date").with_columns(end_date=end_date)
    equity = metrics.equity_frame(
        final=runs.final,
        run_up=runs.run_up,
        drawdown=runs.drawdown,
        first_close=mine["first_close"].cast(pl.Float64).to_numpy(),
        last_close=bars.close[last_row],
        initial=costs.initial_investment,
        dividends=metrics.window_dividends(paid, spans),
    ).with_columns(
        mine.select(*WINDOW, "start_date", "full_history", *TRADE_FIGURES),
        end_date=end_date,
    )
    first_new = trades.group_by(WINDOW).agg(_entry=pl.col("start_date").min())
    states = (
        mine.select(WINDOW)
        .with_columns(
            peak=runs.peak,
            trough=runs.trough,
            drawdown=runs.drawdown,
            run_up=runs.run_up,
            max_close=runs.max_close,
            pending=pl.Series(runs.pending, dtype=pl.Int32),
            first_entry=state["first_entry"],
        )
        .join(first_new, on=WINDOW, how="left", maintain_order="left")
        .with_columns(first_entry=pl.col("first_entry").fill_null(pl.col("_entry")))
        .drop("_entry")
    )
    return _Done(trades=trades, equity=equity, states=states)


def _trade_rows(
    runs: Runs,
    mine: pl.DataFrame,
    open_trades: pl.DataFrame,
    new_bars: pl.DataFrame,
    bars: FlatBars,
    column: np.ndarray,
    fill: str,
) -> pl.DataFrame:
    """The trades the new bars touched: each window's open trade carried in (entry row -1: its
    entry from the stored row) and those entered on the new bars, as `trades.trade_arrays` and
    `backtests._trade_frame` compute a replayed trade's row."""
    t = runs.trades
    col = column[t.task]
    carried_in = t.entry_row < 0
    entry_row = np.where(carried_in, 0, t.entry_row)
    closed = t.exit_row >= 0
    mark_row = np.where(closed, t.exit_row, bars.length[col] - 1)
    days = new_bars["date"]
    before = open_trades[t.task]
    last_price = last_prices(bars, fill, closed, bars.offset[col] + mark_row, t.reason)
    entry_price = np.where(carried_in, before["entry_price"].to_numpy(), t.entry_price)
    entry_fee = np.where(carried_in, before["fees"].to_numpy(), t.entry_fee)
    start_price = np.where(
        carried_in,
        before["start_price"].to_numpy(),
        bars.prices_at(fill)[bars.offset[col] + entry_row],
    )
    fees, profit, percent = money(
        closed, t.units, entry_price, entry_fee, t.exit_price, t.exit_fee, last_price, t.dividends
    )
    start = pl.Series(
        np.where(
            carried_in,
            before["start_date"].cast(pl.Int32).fill_null(0).to_numpy(),
            days.gather(bars.offset[col] + entry_row).cast(pl.Int32).to_numpy(),
        )
    ).cast(pl.Date)
    marked = days.gather(bars.offset[col] + mark_row)
    return (
        mine[t.task]
        .select(*WINDOW, "full_history")
        .with_columns(
            action=pl.Series(np.where(closed, "Sell", "Buy"), dtype=pl.String),
            exit_reason=REASONS.gather(t.reason),
            start_date=start,
            sell_date=pl.when(pl.Series(closed)).then(marked),
            days_in_trade=(marked - start).dt.total_days().cast(pl.Int32),
            start_price=start_price,
            entry_price=entry_price,
            exit_price=pl.Series(t.exit_price, nan_to_null=True),
            last_price=last_price,
            highest_price=t.highest,
            lowest_price=t.lowest,
            units=t.units,
            fees=fees,
            dividends=t.dividends,
            profit=profit,
            profit_percent=percent,
            closed=pl.Series(closed),
        )
    )


def _summaries(
    numbered: pl.DataFrame, trades: pl.DataFrame, closed_trades: ClosedTrades
) -> pl.DataFrame:
    """One summary per carried window, as `backtests._summary_frame` computes a replayed one: the
    closed trades' figures stand unless a trade closed on the new bars, then they are computed
    again from the window's closed trades."""
    closing = trades.filter("closed").select(WINDOW).unique()
    figures = numbered.select("task", *TRADE_FIGURES)
    if closing.height:
        stored = closed_trades(closing["symbol"].unique().to_list()).with_columns(
            closed=pl.lit(True)
        )
        window_trades = pl.concat(
            [stored.join(closing, on=WINDOW, how="semi"), trades.filter("closed")],
            how="diagonal_relaxed",
        ).sort([*WINDOW, "start_date"])
        tasks = numbered.select(*WINDOW, "task").join(closing, on=WINDOW, how="semi")
        again = metrics.trade_metrics(window_trades.join(tasks, on=WINDOW), "task")
        figures = pl.concat(
            [figures.join(tasks, on="task", how="anti"), again], how="diagonal_relaxed"
        )
    equity = numbered.drop(TRADE_FIGURES)
    return metrics.summaries(equity, figures, on="task")
