"""The backtest kernel: each symbol's long-only, all-in state machine compiled with numba.

Orders fill at the close of the signal's bar (`close`) or at the next bar's open (`next_open`).
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

import numba
import numpy as np
from numpy.typing import NDArray

from pipelines.catalog import FILLS
from pipelines.platform.compiled import kernel_input

Panel = NDArray[np.float64]
Mask = NDArray[np.bool_]
Rows = NDArray[np.int64]

NO_EXIT = 0
STOP_LOSS = 1
TRAILING_STOP = 2
TAKE_PROFIT = 3
SIGNAL = 4
DELISTED = 6
EXIT_REASONS: dict[int, str] = {
    STOP_LOSS: "stop_loss",
    TRAILING_STOP: "trailing_stop",
    TAKE_PROFIT: "take_profit",
    SIGNAL: "signal",
    DELISTED: "delisted",
}
"""Exit reason codes, in priority order when several fire on one bar (lowest code wins); a trade
still open at the last bar of a delisted symbol closes at that close, `delisted`."""
NO_ORDER = 0
ENTRY = 5
"""A run's pending order under `next_open` fills: none, an exit (its reason code) or an entry."""


@dataclass(frozen=True)
class Costs:
    """Initial cash and trading costs as fractions of traded value."""

    initial_investment: float = 10_000.0
    fee: float = 0.001
    """Charged on each leg: entry notional x fee, exit notional x fee."""
    slippage: float = 0.0005
    """Adverse fill: buys at the fill's market price (the close, or the next open) x (1 +
    slippage), sells at it x (1 - slippage)."""


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


@dataclass(frozen=True)
class FlatBars:
    """Bars of many symbols laid end to end: symbol j owns rows offset[j] .. offset[j] + length[j] - 1."""

    close: Panel
    high: Panel
    low: Panel
    offset: Rows
    length: Rows
    rows: int
    """The longest symbol's length: rows outside a window count as NaN equity up to it (the
    equity curve of a (rows x symbols) panel)."""
    open: Panel | None = None
    """Opens, which `next_open` fills need (None: close fills only)."""
    dividend: Panel | None = None
    """Cash per unit paid on each bar's ex-date, 0 on other bars (None: no dividends). A position
    held over the close before an ex-date is credited it at that bar's open."""
    delisted: Mask | None = None
    """Per symbol: its last bar is its last (a delisting follows): a trade still open there closes
    at its close, and nothing enters or is left pending on it (None: none)."""

    def prices_at(self, fill: str) -> Panel:
        """The market price a fill of `fill` takes on each bar, before slippage: the close, or
        for `next_open` the open."""
        if fill != "next_open":
            return self.close
        if self.open is None:
            raise ValueError("next_open fills need the bars' opens")
        return self.open


@dataclass(frozen=True)
class Trades:
    """Every trade of a batch of runs (tasks), task by task and in entry order within a task."""

    task: Rows
    entry_row: Rows
    """Bar of the entry, counted from the symbol's first bar (as are exit rows)."""
    exit_row: Rows
    """-1 while open."""
    reason: Rows
    """Exit reason code, NO_EXIT while open."""
    entry_price: Panel
    units: Panel
    entry_fee: Panel
    exit_price: Panel
    """NaN while open."""
    exit_fee: Panel
    """0 while open."""
    highest: Panel
    """Highest high from the entry bar to the exit bar, or to the last bar while open."""
    lowest: Panel
    dividends: Panel
    """Cash of the dividends credited while open (units x each ex-date's dividend)."""


@dataclass(frozen=True)
class Runs:
    """A batch of runs (one per task): their trades and, per task, the equity curve's figures."""

    trades: Trades
    count: Rows
    """Trades per task; a task's trades are rows first[k] .. first[k] + count[k] - 1."""
    first: Rows
    final: Panel
    """Equity at the symbol's last bar (NaN if that bar has no close)."""
    run_up: Panel
    """Largest rise of the equity curve over its running minimum (fraction)."""
    drawdown: Panel
    """Largest fall of the equity curve from its running maximum (fraction, <= 0)."""
    in_position: Mask
    peak: Panel
    """Running maximum of the equity curve at the last bar (what a resumed run carries on from)."""
    trough: Panel
    """Running minimum of the equity curve at the last bar."""
    max_close: Panel
    """Highest close since the open trade's entry (the trailing stop's reference; NaN when flat)."""
    pending: Rows
    """The order placed at the last bar that fills at the next open (NO_ORDER, an exit reason code
    or ENTRY; always NO_ORDER under close fills)."""


_TRADE_FLOATS = 8
"""entry_price, units, entry_fee, exit_price, exit_fee, highest, lowest, dividends (rows of
`floats`)."""
_CHUNK = 64
"""Tasks a thread takes at a time."""
_TASK_FLOATS = 6
"""final, run_up, drawdown, peak, trough, max_close (rows of `figures`)."""


@numba.njit(cache=True, nogil=True)
def _fmax(a: float, b: float) -> float:
    """np.fmax on scalars: the larger, ignoring a NaN (so also one step of np.nanmax)."""
    if a != a or b > a:
        return b
    return a


@numba.njit(cache=True, nogil=True)
def _fmin(a: float, b: float) -> float:
    """np.fmin on scalars (one step of np.nanmin)."""
    if a != a or b < a:
        return b
    return a


@numba.njit(cache=True, nogil=True)
def _curve_step(
    equity: float, peak: float, trough: float, drawdown: float, run_up: float
) -> tuple[float, float, float, float]:
    """One bar of the equity curve's figures, as the numpy metrics computed them on a panel
    column: running fmax / fmin, then nanmin of equity / peak - 1 and nanmax of equity / trough -
    1, where a NaN equity (outside the window) counts +inf and -inf."""
    peak = _fmax(peak, equity)
    trough = _fmin(trough, equity)
    if equity != equity:
        return peak, trough, _fmin(drawdown, np.inf), _fmax(run_up, -np.inf)
    return peak, trough, _fmin(drawdown, equity / peak - 1.0), _fmax(run_up, equity / trough - 1.0)


@numba.njit(cache=True, inline="always", nogil=True)
def _buy(
    t: int, price: float, cash: float, slot: int, costs: Panel, floats: Panel, ints: Rows
) -> tuple[float, int]:
    """All the cash into a new trade (the next slot) at market `price` on row t: (units, slot)."""
    fill = price * (1.0 + costs[2])
    units = cash / (fill * (1.0 + costs[1]))
    slot += 1
    ints[0, slot] = t
    ints[1, slot] = -1
    ints[2, slot] = NO_EXIT
    floats[0, slot] = fill
    floats[1, slot] = units
    floats[2, slot] = units * fill * costs[1]
    floats[3, slot] = np.nan
    floats[4, slot] = 0.0
    floats[7, slot] = 0.0
    return units, slot


@numba.njit(cache=True, inline="always", nogil=True)
def _sell(
    t: int,
    price: float,
    code: int,
    units: float,
    highest: float,
    lowest: float,
    slot: int,
    costs: Panel,
    floats: Panel,
    ints: Rows,
) -> float:
    """The whole position out of trade `slot` at market `price` on row t: the cash it brings."""
    fill = price * (1.0 - costs[2])
    gross = units * fill
    paid = gross * costs[1]
    ints[1, slot] = t
    ints[2, slot] = code
    floats[3, slot] = fill
    floats[4, slot] = paid
    floats[5, slot] = highest
    floats[6, slot] = lowest
    return gross - paid


@numba.njit(cache=True, inline="always", nogil=True)
def _bar(
    t: int,
    o: float,
    c: float,
    high: float,
    low: float,
    dividend: float,
    entry: bool,
    exit_signal: bool,
    at_open: bool,
    final: bool,
    held: bool,
    pending: int,
    cash: float,
    units: float,
    start_price: float,
    max_close: float,
    highest: float,
    lowest: float,
    slot: int,
    factors: Panel,
    costs: Panel,
    floats: Panel,
    ints: Rows,
) -> tuple[bool, int, float, float, float, float, float, float, int]:
    """One bar of one run (row `t` of its symbol). At the open, a position held over the close
    before is credited the bar's `dividend` per unit (kept as cash until it exits), then the order
    pending from the bar before fills (`at_open`: next-open fills). At the close, a held position exits if a rule or
    the exit signal fires, else a flat one with an entry signal buys with all its cash (not on
    the bar it exited); under next-open fills either becomes the pending order instead. Fills go
    to the trade `slot` (an entry takes the next one). On a delisted symbol's `final` bar nothing
    enters and an open position exits at the close (`DELISTED`), whatever the fill. Returns the
    run's state after the bar: held, pending, cash, units, start_price, max_close, highest, lowest,
    slot.

    The one place a bar is traded: a run from its first row and a run resumed from carried state
    step through the same arithmetic, so both come out bit for bit the same."""
    if held and dividend > 0.0:
        paid = units * dividend
        cash += paid
        floats[7, slot] += paid
    if pending != NO_ORDER and o == o:
        if pending == ENTRY:
            units, slot = _buy(t, o, cash, slot, costs, floats, ints)
            cash = 0.0
            held = True
            start_price = max_close = o
            highest = high
            lowest = low
        else:
            highest = _fmax(highest, high)
            lowest = _fmin(lowest, low)
            cash += _sell(t, o, pending, units, highest, lowest, slot, costs, floats, ints)
            units = 0.0
            held = False
            start_price = max_close = highest = lowest = np.nan
        pending = NO_ORDER
    stop_factor, trail_factor, take_factor = factors[0], factors[1], factors[2]
    exited = False
    if held:
        highest = _fmax(highest, high)
        lowest = _fmin(lowest, low)
        max_close = _fmax(max_close, c)
        code = NO_EXIT
        if stop_factor == stop_factor and c <= start_price * stop_factor:
            code = STOP_LOSS
        elif trail_factor == trail_factor and c <= max_close * trail_factor:
            code = TRAILING_STOP
        elif take_factor == take_factor and c >= start_price * take_factor:
            code = TAKE_PROFIT
        elif exit_signal:
            code = SIGNAL
        if code != NO_EXIT:
            if at_open:
                pending = code
            else:
                cash += _sell(t, c, code, units, highest, lowest, slot, costs, floats, ints)
                units = 0.0
                held = False
                exited = True
                start_price = max_close = highest = lowest = np.nan
    if final and held:
        cash += _sell(t, c, DELISTED, units, highest, lowest, slot, costs, floats, ints)
        units = 0.0
        held = False
        exited = True
        pending = NO_ORDER
        start_price = max_close = highest = lowest = np.nan
    if c == c and not held and not exited and entry and not final:
        if at_open:
            pending = ENTRY
        else:
            units, slot = _buy(t, c, cash, slot, costs, floats, ints)
            cash = 0.0
            held = True
            start_price = max_close = c
            highest = high
            lowest = low
    return held, pending, cash, units, start_price, max_close, highest, lowest, slot


@numba.njit(cache=True, inline="always", nogil=True)
def _close_task(
    k: int,
    slot: int,
    held: bool,
    highest: float,
    lowest: float,
    first: Rows,
    floats: Panel,
    count: Rows,
    in_position: Mask,
    final: float,
    run_up: float,
    drawdown: float,
    peak: float,
    trough: float,
    max_close: float,
    figures: Panel,
    pending: int,
    orders: Rows,
) -> None:
    """Task k's end: an open trade's highest high and lowest low so far, its trade count, whether
    it holds, its figures (rows of `figures`: _TASK_FLOATS) and its pending order."""
    orders[k] = pending
    if held:
        floats[5, slot] = highest
        floats[6, slot] = lowest
    count[k] = slot + 1 - first[k]
    in_position[k] = held
    figures[0, k] = final
    figures[1, k] = run_up
    figures[2, k] = drawdown
    figures[3, k] = peak
    figures[4, k] = trough
    figures[5, k] = max_close


@dataclass(frozen=True)
class Carried:
    """Each run's state at its symbol's last stored bar, what `resume_tasks` carries on from: the
    position (the open trade's units, start price, highest close, highest high and lowest low) and
    the equity curve's running figures."""

    held: Mask
    cash: Panel
    """While held, the dividends the open trade was credited (an entry spends all the cash);
    the final equity when flat."""
    units: Panel
    start_price: Panel
    max_close: Panel
    highest: Panel
    lowest: Panel
    peak: Panel
    trough: Panel
    drawdown: Panel
    run_up: Panel
    pending: Rows
    """The order the last bar placed, to fill at the next open (`Runs.pending`)."""


_CARRIED_FIELDS = tuple(field.name for field in fields(Carried))
_CARRIED_TYPES = {"held": np.bool_, "pending": np.int64}
CARRIED = np.dtype([(name, _CARRIED_TYPES.get(name, np.float64)) for name in _CARRIED_FIELDS])
"""`Carried` as one record per task, the kernel's starting state (its fields by name)."""


def _records(carried: Carried) -> NDArray[np.void]:
    records = np.empty(len(carried.held), CARRIED)
    for name in _CARRIED_FIELDS:
        records[name] = getattr(carried, name)
    return records


@numba.njit(cache=True, parallel=True, nogil=True)
def _tasks(
    open_: Panel,
    close: Panel,
    high: Panel,
    low: Panel,
    dividend: Panel,
    entry: Mask,
    exit_signal: Mask,
    offset: Rows,
    length: Rows,
    delisted: Mask,
    at_open: bool,
    task_column: Rows,
    task_start: Rows,
    start: NDArray[np.void],
    first: Rows,
    factors: Panel,
    costs: Panel,
    equity: Panel,
    floats: Panel,
    ints: Rows,
    count: Rows,
    figures: Panel,
    in_position: Mask,
    orders: Rows,
) -> None:
    """Run every task (symbol task_column[k] from its row task_start[k], in `start[k]`'s state:
    a new run's, or one carried on) into the preallocated outputs: trade k's slots from first[k],
    an open trade carried in (entry row -1) its first; `equity` written when non-empty (one task
    per symbol).

    factors: 1 - stop_loss, 1 - trailing_stop, 1 + take_profit (NaN = rule off); costs: initial
    cash, fee, slippage; at_open: next-open fills (`open_` is read only then). Every formula keeps
    the numpy engine's operation order (bit-identical).
    """
    with_equity = equity.size > 0
    for k in numba.prange(task_column.size):
        j = task_column[k]
        base, n = offset[j], length[j]
        last = n - 1 if delisted[j] else -1
        state = start[k]
        held, cash, units = state.held, state.cash, state.units
        start_price, max_close = state.start_price, state.max_close
        highest, lowest = state.highest, state.lowest
        peak, trough, drawdown, run_up = state.peak, state.trough, state.drawdown, state.run_up
        pending = state.pending
        slot = first[k] - 1
        if held:
            slot += 1
            ints[0, slot] = -1
            ints[1, slot] = -1
            ints[2, slot] = NO_EXIT
            floats[0, slot] = np.nan
            floats[1, slot] = units
            floats[2, slot] = np.nan
            floats[3, slot] = np.nan
            floats[4, slot] = 0.0
            floats[7, slot] = cash
        final = np.nan
        for t in range(task_start[k], n):
            i = base + t
            c = close[i]
            o = open_[i] if at_open else np.nan
            held, pending, cash, units, start_price, max_close, highest, lowest, slot = _bar(
                t,
                o,
                c,
                high[i],
                low[i],
                dividend[i],
                entry[i],
                exit_signal[i],
                at_open,
                t == last,
                held,
                pending,
                cash,
                units,
                start_price,
                max_close,
                highest,
                lowest,
                slot,
                factors,
                costs,
                floats,
                ints,
            )
            live = c == c
            value = cash + units * c if live else np.nan
            if with_equity and live:
                equity[i] = value
            peak, trough, drawdown, run_up = _curve_step(value, peak, trough, drawdown, run_up)
            final = value
        _close_task(
            k,
            slot,
            held,
            highest,
            lowest,
            first,
            floats,
            count,
            in_position,
            final,
            run_up,
            drawdown,
            peak,
            trough,
            max_close,
            figures,
            pending,
            orders,
        )


@numba.njit(cache=True, nogil=True)
def _curves(equity: Panel, figures: Panel) -> None:
    """Run-up and drawdown of every column of an equity panel (NaN = outside the window)."""
    for j in range(equity.shape[1]):
        peak = trough = drawdown = run_up = np.nan
        for t in range(equity.shape[0]):
            peak, trough, drawdown, run_up = _curve_step(
                equity[t, j], peak, trough, drawdown, run_up
            )
        figures[0, j] = run_up
        figures[1, j] = drawdown


def curve_figures(equity: Panel) -> tuple[Panel, Panel]:
    """Per column of an equity panel: (largest run-up, largest drawdown) as fractions."""
    figures = np.empty((2, equity.shape[1]))
    _curves(kernel_input(equity, np.float64), figures)
    return figures[0], figures[1]


def _factor(value: float | None, sign: float) -> float:
    return np.nan if value is None else 1.0 + sign * value


def _outputs(bound: Rows) -> tuple[Rows, Panel, Rows, Rows, Panel, Mask, Rows]:
    """The kernels' outputs for tasks of at most bound[k] trades each: first slots, trade floats
    and ints, trade counts, figures, whether each task holds at the end and its pending order."""
    tasks = len(bound)
    first = np.zeros(tasks + 1, np.int64)
    np.cumsum(bound, out=first[1:])
    slots = int(first[-1])
    return (
        first,
        np.empty((_TRADE_FLOATS, slots)),
        np.empty((3, slots), np.int64),
        np.empty(tasks, np.int64),
        np.empty((_TASK_FLOATS, tasks)),
        np.empty(tasks, np.bool_),
        np.empty(tasks, np.int64),
    )


def _bar_inputs(
    bars: FlatBars, entry: Mask, exit_signal: Mask, fill: str
) -> tuple[Panel, Panel, Panel, Panel, Panel, Mask, Mask, Rows, Rows, Mask, bool]:
    """What the kernel reads of the bars: the fill's prices (the closes again for close fills,
    which the kernel then does not read), close, high, low, dividends, the signals, offsets,
    lengths, the delisted symbols and whether fills are at the open, each array as
    `kernel_input` (one array type per argument, so one compiled specialization)."""
    dividend = np.zeros(len(bars.close)) if bars.dividend is None else bars.dividend
    delisted = np.zeros(len(bars.offset), np.bool_) if bars.delisted is None else bars.delisted
    return (
        kernel_input(bars.prices_at(fill), np.float64),
        kernel_input(bars.close, np.float64),
        kernel_input(bars.high, np.float64),
        kernel_input(bars.low, np.float64),
        kernel_input(dividend, np.float64),
        kernel_input(entry, np.bool_),
        kernel_input(exit_signal, np.bool_),
        kernel_input(bars.offset, np.int64),
        kernel_input(bars.length, np.int64),
        kernel_input(delisted, np.bool_),
        fill == "next_open",
    )


def _factors(rules: ExitRules) -> Panel:
    return np.array(
        [
            _factor(rules.stop_loss, -1.0),
            _factor(rules.trailing_stop, -1.0),
            _factor(rules.take_profit, 1.0),
        ]
    )


def _runs(
    first: Rows,
    floats: Panel,
    ints: Rows,
    count: Rows,
    figures: Panel,
    in_position: Mask,
    orders: Rows,
) -> Runs:
    """The kernels' slot arrays as Runs: the slots each task used, in task order."""
    used = np.repeat(first[:-1], count) + ranks(count)
    ints, floats = ints[:, used], floats[:, used]
    trades = Trades(
        task=np.repeat(np.arange(len(count)), count),
        entry_row=ints[0],
        exit_row=ints[1],
        reason=ints[2],
        entry_price=floats[0],
        units=floats[1],
        entry_fee=floats[2],
        exit_price=floats[3],
        exit_fee=floats[4],
        highest=floats[5],
        lowest=floats[6],
        dividends=floats[7],
    )
    starts = np.zeros(len(count), np.int64)
    np.cumsum(count[:-1], out=starts[1:])
    return Runs(
        trades=trades,
        count=count,
        first=starts,
        final=figures[0],
        run_up=figures[1],
        drawdown=figures[2],
        in_position=in_position,
        peak=figures[3],
        trough=figures[4],
        max_close=figures[5],
        pending=orders,
    )


def run_tasks(
    bars: FlatBars,
    entry: Mask,
    exit_signal: Mask,
    task_column: Rows,
    task_start: Rows,
    rules: ExitRules,
    costs: Costs,
    equity: Panel | None = None,
    fill: str = "close",
) -> Runs:
    """Run symbol task_column[k] from its row task_start[k], for every task k (in parallel).

    `entry` and `exit_signal` are aligned with the rows of `bars`. At each bar's close, a held
    position exits if a rule or the exit signal fires; otherwise a flat symbol with an entry
    signal buys with all its cash. One decision per symbol and bar: a symbol that exits on a bar
    does not re-enter on it. Signals before the start row are ignored. `equity`, when given (one
    task per symbol at most), receives the equity of every bar of a window.

    `fill` = "close" fills a decision at its bar's close; "next_open" at the next bar's open
    (the open is the trade's reference price for the rules), and a decision on the last bar is
    left pending (`Runs.pending`).
    """
    tasks = len(task_column)
    nothing = np.full(tasks, np.nan)
    # rows outside the window are NaN equity in a panel: +inf / -inf for the figures
    partial = (task_start > 0) | (bars.length[task_column] < bars.rows)
    fresh = Carried(
        held=np.zeros(tasks, np.bool_),
        cash=np.full(tasks, costs.initial_investment),
        units=np.zeros(tasks),
        start_price=nothing,
        max_close=nothing,
        highest=nothing,
        lowest=nothing,
        peak=nothing,
        trough=nothing,
        drawdown=np.where(partial, np.inf, np.nan),
        run_up=np.where(partial, -np.inf, np.nan),
        pending=np.full(tasks, NO_ORDER, np.int64),
    )
    return _run(
        bars, entry, exit_signal, task_column, task_start, fresh, rules, costs, equity, fill
    )


def resume_tasks(
    bars: FlatBars,
    entry: Mask,
    exit_signal: Mask,
    task_column: Rows,
    carried: Carried,
    rules: ExitRules,
    costs: Costs,
    fill: str = "close",
) -> Runs:
    """Each task (a run of symbol task_column[k]) carried on from its state over its symbol's new
    bars (`bars`, rows counted from the first new one), as `run_tasks` would have run them after
    the stored ones. A task holding a position has its open trade as its first trade, with entry
    row -1 and NaN entry price and fee (the stored trade knows them); `final` is NaN for a
    symbol without new bars. A pending order carried in fills at the first new bar's open."""
    start = np.zeros(len(task_column), np.int64)
    return _run(bars, entry, exit_signal, task_column, start, carried, rules, costs, None, fill)


def _run(
    bars: FlatBars,
    entry: Mask,
    exit_signal: Mask,
    task_column: Rows,
    task_start: Rows,
    state: Carried,
    rules: ExitRules,
    costs: Costs,
    equity: Panel | None,
    fill: str,
) -> Runs:
    """The kernel over every task from `state`, into outputs of one slot per entry signal from the
    task's start row, plus one for an open trade or a pending entry carried in."""
    if fill not in FILLS:
        raise ValueError(f"unknown fill {fill!r}: one of {', '.join(FILLS)}")
    starts = bars.offset[task_column]
    ends = starts + bars.length[task_column]
    counted = np.zeros(len(entry) + 1, np.int64)
    np.cumsum(entry, out=counted[1:])
    opened = counted[ends] - counted[np.minimum(starts + task_start, ends)]
    bound = state.held.astype(np.int64) + (state.pending == ENTRY) + opened
    first, floats, ints, count, figures, in_position, orders = _outputs(bound)
    # dynamic chunks: threads that finish early take more tasks (robust when a core is busy)
    previous = numba.set_parallel_chunksize(_CHUNK)
    try:
        _tasks(
            *_bar_inputs(bars, entry, exit_signal, fill),
            kernel_input(task_column, np.int64),
            kernel_input(task_start, np.int64),
            _records(state),
            first,
            _factors(rules),
            np.array([costs.initial_investment, costs.fee, costs.slippage]),
            np.empty(0) if equity is None else equity,
            floats,
            ints,
            count,
            figures,
            in_position,
            orders,
        )
    finally:
        numba.set_parallel_chunksize(previous)
    return _runs(first, floats, ints, count, figures, in_position, orders)


def ranks(count: Rows) -> Rows:
    """0 .. count[k] - 1 for every k, concatenated."""
    total = int(count.sum())
    ranked: Rows = np.arange(total) - np.repeat(np.cumsum(count) - count, count)
    return ranked


def backtest(
    close: Panel,
    high: Panel,
    low: Panel,
    entry: Mask,
    exit_signal: Mask,
    start: Rows,
    rules: ExitRules,
    costs: Costs,
    open_: Panel | None = None,
    fill: str = "close",
    dividend: Panel | None = None,
    delisted: Mask | None = None,
) -> Result:
    """Run every symbol (panel column) from its `start` row to the panel's last row.

    Panels are (bars x symbols), column j = symbol j from its first bar, NaN after its last.
    Same rules as `run_tasks` (`open_` is needed for `fill` = "next_open"); the fills come out
    in bar order, symbols in column order within a bar.
    """
    rows, width = close.shape

    def flat(panel: NDArray[Any], dtype: type[np.generic]) -> NDArray[Any]:
        return np.ravel(np.asarray(panel, dtype), order="F")

    bars = FlatBars(
        close=flat(close, np.float64),
        high=flat(high, np.float64),
        low=flat(low, np.float64),
        offset=np.arange(width, dtype=np.int64) * rows,
        length=np.full(width, rows, np.int64),
        rows=rows,
        open=None if open_ is None else flat(open_, np.float64),
        dividend=None if dividend is None else flat(dividend, np.float64),
        delisted=None if delisted is None else np.asarray(delisted, np.bool_),
    )
    equity = np.full(rows * width, np.nan)
    columns = np.arange(width, dtype=np.int64)
    entry_flat, exit_flat = flat(entry, np.bool_), flat(exit_signal, np.bool_)
    start_rows = np.asarray(start, np.int64)
    runs = run_tasks(bars, entry_flat, exit_flat, columns, start_rows, rules, costs, equity, fill)
    t = runs.trades
    closed = t.exit_row >= 0
    nan = np.full(len(t.task), np.nan)
    no_exit = np.full(len(t.task), NO_EXIT, np.int64)
    entries = _in_bar_order(
        Fills(t.entry_row, t.task, t.entry_price, t.units, t.entry_fee, no_exit, nan, nan)
    )
    exits = _in_bar_order(
        Fills(
            t.exit_row[closed],
            t.task[closed],
            t.exit_price[closed],
            t.units[closed],
            t.exit_fee[closed],
            t.reason[closed],
            t.highest[closed],
            t.lowest[closed],
        )
    )
    highest = np.full(width, np.nan)
    lowest = np.full(width, np.nan)
    highest[t.task[~closed]] = t.highest[~closed]
    lowest[t.task[~closed]] = t.lowest[~closed]
    return Result(
        entries=entries,
        exits=exits,
        equity=np.ascontiguousarray(equity.reshape(width, rows).T),
        in_position=runs.in_position,
        highest=highest,
        lowest=lowest,
    )


def _in_bar_order(fills: Fills) -> Fills:
    order = np.lexsort((fills.column, fills.row))
    return Fills(*(getattr(fills, f)[order] for f in Fills.__dataclass_fields__))
