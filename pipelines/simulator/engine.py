"""The backtest kernel on (bars x symbols) numpy panels: long-only, all-in, fills at the signal bar's close.

One state machine per symbol, all symbols stepped together: the loop runs over bars (rows) and
every step is a vectorized operation across symbols (columns). Panels are aligned as the indicator
library aligns them (column j = symbol j from its first bar, NaN after its last). See
docs/trade-simulator.md for the conventions.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

Panel = NDArray[np.float64]
Mask = NDArray[np.bool_]
Rows = NDArray[np.int64]

NO_EXIT = 0
STOP_LOSS = 1
TRAILING_STOP = 2
TAKE_PROFIT = 3
SIGNAL = 4
EXIT_REASONS: dict[int, str] = {
    STOP_LOSS: "stop_loss",
    TRAILING_STOP: "trailing_stop",
    TAKE_PROFIT: "take_profit",
    SIGNAL: "signal",
}
"""Exit reason codes, in priority order when several fire on one bar (lowest code wins)."""


@dataclass(frozen=True)
class Costs:
    """Initial cash and trading costs as fractions of traded value."""

    initial_investment: float = 10_000.0
    fee: float = 0.001
    """Charged on each leg: entry notional x fee, exit notional x fee."""
    slippage: float = 0.0005
    """Adverse fill: buys at close x (1 + slippage), sells at close x (1 - slippage)."""


@dataclass(frozen=True)
class ExitRules:
    """Path-dependent exits, as fractions of a price; None disables the rule."""

    stop_loss: float | None = None
    """Exit when close <= start_price x (1 - stop_loss)."""
    trailing_stop: float | None = None
    """Exit when close <= highest close since entry x (1 - trailing_stop)."""
    take_profit: float | None = None
    """Exit when close >= start_price x (1 + take_profit)."""


@dataclass(frozen=True)
class Fills:
    """Every entry (or exit) of a run as parallel arrays, in bar order."""

    row: Rows
    column: Rows
    price: Panel
    """Fill price including slippage."""
    units: Panel
    fee: Panel
    reason: Rows
    """Exit reason code (NO_EXIT for entries)."""
    highest: Panel
    """Highest high from the entry bar to the exit bar (exits only; NaN for entries)."""
    lowest: Panel


@dataclass(frozen=True)
class Result:
    """A run: the fills, the state at the end, and the equity curve (NaN outside the window)."""

    entries: Fills
    exits: Fills
    equity: Panel
    in_position: Mask
    """Per symbol: still holding at its last bar (the open trade's entry is its last entry)."""
    highest: Panel
    """Per symbol: highest high of the open trade so far (NaN when flat)."""
    lowest: Panel


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
