"""The trend method on (bars x symbols) panels: averages, the ATR-normalised signal, the labels.

signal = (SMA20 - SMA50) / ATR14. A state machine with hysteresis turns it into up / down /
neutral, and a change only happens once the new state has been wanted for CONFIRM_BARS bars in a
row (it then starts on the first of them), so no segment is shorter than that. See docs/trends.md.
"""

from __future__ import annotations

from dataclasses import dataclass

import numba
import numpy as np
from numpy.typing import NDArray

from pipelines.indicators.kernels import Panel, rolling_sum
from pipelines.platform.compiled import kernel_input

SHORT_WINDOW = 20
MID_WINDOW = 50
LONG_WINDOW = 200
ATR_WINDOW = 14

ENTER = 1.0
"""|signal| (ATR units) at which a trend is entered: up at >= +ENTER, down at <= -ENTER."""
EXIT = 0.25
"""A trend is left for neutral once the signal falls back inside (-EXIT, +EXIT) on its side."""
CONFIRM_BARS = 5
"""Bars in a row the new state must be wanted before the trend changes; the minimum segment length."""
WARMUP_BARS = MID_WINDOW
"""A series that starts neutral and turns within this many bars starts in that trend instead."""
STRENGTH_BOUNDS = (1.0, 2.0)
"""|signal| below the first: weak; below the second: moderate; otherwise strong."""

UP, NEUTRAL, DOWN = 1, 0, -1
LABELS: dict[int, str] = {UP: "up", NEUTRAL: "neutral", DOWN: "down"}
STRENGTHS: tuple[str, ...] = ("weak", "moderate", "strong")

States = NDArray[np.int8]
"""(bars, symbols) of UP / NEUTRAL / DOWN."""


def average(x: Panel, n: int) -> Panel:
    """Mean of the last n rows; of all rows so far before row n-1 (so every bar has a value)."""
    counts = np.minimum(np.arange(1, x.shape[0] + 1), n)[:, None]
    expanding = np.cumsum(x, axis=0)
    total = rolling_sum(x, n) if x.shape[0] >= n else np.full(x.shape, np.nan)
    total[: n - 1] = expanding[: n - 1]
    return total / counts


def true_range(high: Panel, low: Panel, close: Panel) -> Panel:
    """max(high - low, |high - prev close|, |low - prev close|); high - low on the first bar."""
    out = high - low
    previous = close[:-1]
    np.maximum(out[1:], np.abs(high[1:] - previous), out=out[1:])
    np.maximum(out[1:], np.abs(low[1:] - previous), out=out[1:])
    return out


@dataclass(frozen=True)
class Signals:
    """What the labels are computed from, every bar of every symbol."""

    short: Panel
    mid: Panel
    long: Panel
    atr: Panel
    signal: Panel


def signals(high: Panel, low: Panel, close: Panel) -> Signals:
    """The three averages, ATR14 and signal = (short - mid) / ATR (0 where ATR is 0)."""
    short, mid = average(close, SHORT_WINDOW), average(close, MID_WINDOW)
    atr = average(true_range(high, low, close), ATR_WINDOW)
    with np.errstate(invalid="ignore", divide="ignore"):
        signal = (short - mid) / atr
    signal[atr == 0.0] = 0.0
    return Signals(short, mid, average(close, LONG_WINDOW), atr, signal)


def wanted(state: States, signal: NDArray[np.float64]) -> States:
    """The state the signal asks for, given the current one (hysteresis)."""
    up, down = signal >= ENTER, signal <= -ENTER
    from_neutral = np.where(up, UP, np.where(down, DOWN, NEUTRAL))
    from_up = np.where(down, DOWN, np.where(signal < EXIT, NEUTRAL, UP))
    from_down = np.where(up, UP, np.where(signal > -EXIT, NEUTRAL, DOWN))
    return np.where(state == UP, from_up, np.where(state == DOWN, from_down, from_neutral)).astype(
        np.int8
    )


def label(signal: Panel, lengths: NDArray[np.int64]) -> States:
    """The trend of every bar: hysteresis, then CONFIRM_BARS confirmation backdated to the run's
    start. Column j holds a symbol's lengths[j] bars from row 0."""
    return label_with_machines(signal, lengths)[0]


def label_with_machines(
    signal: Panel, lengths: NDArray[np.int64]
) -> tuple[States, NDArray[np.int64]]:
    """`label`, and each symbol's labelling state after its last bar ((symbols, 3): state,
    pending, run), from which a later run carries on."""
    rows, width = signal.shape
    labels = np.zeros((rows, width), np.int8)
    machines = np.zeros((width, 3), np.int64)
    for j in range(width):
        column = np.zeros(rows, np.int8)
        machine = new_machine()
        advance(signal[: lengths[j], j], column, 0, machine)
        labels[:, j] = column
        machines[j] = machine
    return _start_in_first_trend(labels, lengths), machines


def new_machine() -> NDArray[np.int64]:
    """The labelling state before a symbol's first bar: neutral, nothing pending."""
    return np.array([NEUTRAL, NEUTRAL, 0], np.int64)


def advance(
    signal: NDArray[np.float64],
    labels: NDArray[np.int8],
    start: int,
    machine: NDArray[np.int64],
) -> None:
    """Label rows `start`.. of `labels` from `signal` (same length), carrying `machine`
    ([state, pending, run] after row start-1, updated in place). Rows before `start` hold the
    labels given so far; a confirmation may rewrite the last CONFIRM_BARS-1 of them."""
    _advance(kernel_input(signal, np.float64), labels, start, machine, ENTER, EXIT, CONFIRM_BARS)


@numba.njit(cache=True, nogil=True)
def _wanted_one(state: int, signal: float, enter: float, exit_: float) -> int:
    if state == UP:
        return DOWN if signal <= -enter else (NEUTRAL if signal < exit_ else UP)
    if state == DOWN:
        return UP if signal >= enter else (NEUTRAL if signal > -exit_ else DOWN)
    return UP if signal >= enter else (DOWN if signal <= -enter else NEUTRAL)


@numba.njit(cache=True, nogil=True)
def _advance(
    signal: NDArray[np.float64],
    labels: NDArray[np.int8],
    start: int,
    machine: NDArray[np.int64],
    enter: float,
    exit_: float,
    confirm: int,
) -> None:  # pragma: no cover - compiled; covered through `advance` and `label`
    state, pending, run = machine[0], machine[1], machine[2]
    for t in range(start, len(signal)):
        want = _wanted_one(state, signal[t], enter, exit_)
        changed = want != state
        run = run + 1 if changed and want == pending else (1 if changed else 0)
        pending = want if changed else state
        if run >= confirm:
            for r in range(t - confirm + 1, t):
                labels[r] = want
            state = want
            run = 0
        labels[t] = state
    machine[0], machine[1], machine[2] = state, pending, run


def window_mean_at(x: NDArray[np.float64], first_row: int, row: int, n: int) -> float:
    """`average(x, n)` on absolute row `row`, from `x` holding rows `first_row`.. of a series:
    the same additions in the same order as the block method (so the same bits), reading only the
    rows it needs (row - 2n + 1 on; from row 0 before the window fills)."""
    return float(_window_mean_at(kernel_input(x, np.float64), first_row, row, n))


@numba.njit(cache=True, nogil=True)
def _window_mean_at(
    x: NDArray[np.float64], first_row: int, row: int, n: int
) -> float:  # pragma: no cover
    if row < n - 1:  # the expanding mean of the first rows: a cumulative sum from row 0
        total = x[0 - first_row]
        for k in range(1, row + 1):
            total = total + x[k - first_row]
        return total / (row + 1)
    block = (row // n) * n
    prefix = x[block - first_row]
    for k in range(block + 1, row + 1):
        prefix = x[k - first_row] + prefix
    if row % n == n - 1:
        return prefix / n
    suffix = x[block - 1 - first_row]
    for k in range(block - 2, row - n, -1):
        suffix = x[k - first_row] + suffix
    return (prefix + suffix) / n


def _start_in_first_trend(labels: States, lengths: NDArray[np.int64]) -> States:
    """A series that starts neutral and turns within WARMUP_BARS starts in that trend: the signal
    needs MID_WINDOW bars before it can tell sideways from a trend."""
    turned = (labels != labels[:1]) & (np.arange(labels.shape[0])[:, None] < lengths[None, :])
    # A series that never turns stays neutral (one shorter than WARMUP_BARS among them).
    first = turned.argmax(axis=0)
    for j in np.flatnonzero(turned.any(axis=0) & (labels[0] == NEUTRAL) & (first < WARMUP_BARS)):
        labels[: first[j], j] = labels[first[j], j]
    return labels


def strength(signal: NDArray[np.float64]) -> NDArray[np.int64]:
    """Index into STRENGTHS of |signal|."""
    return np.searchsorted(np.asarray(STRENGTH_BOUNDS), np.abs(signal), side="right")


def segment_ids(labels: States, lengths: NDArray[np.int64]) -> NDArray[np.int64]:
    """(bars, symbols): 0 on each symbol's first bar, +1 wherever the label changes."""
    change = np.zeros(labels.shape, np.int64)
    change[1:] = labels[1:] != labels[:-1]
    # Padding rows after a symbol's last bar never count.
    change[np.arange(labels.shape[0])[:, None] >= lengths[None, :]] = 0
    return np.cumsum(change, axis=0)
