"""The compiled engine against the numpy engine it replaced: same fills, equity and figures, bit for bit."""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import TypeVar

import numpy as np
import pytest
from numpy.typing import NDArray

from pipelines.simulator import metrics
from pipelines.simulator.engine import (
    Costs,
    ExitRules,
    Fills,
    FlatBars,
    Mask,
    Panel,
    Result,
    Rows,
    backtest,
    run_tasks,
)
from tests.pipelines.simulator import numpy_engine

FREE = Costs(initial_investment=10_000.0, fee=0.0, slippage=0.0)
Cell = TypeVar("Cell", bound=np.generic)


def assert_same_bits(ours: NDArray[np.generic], theirs: NDArray[np.generic], what: str) -> None:
    """Same dtype and shape, NaN at the same cells and every other value with the same bits."""
    assert ours.dtype == theirs.dtype, what
    assert ours.shape == theirs.shape, what
    if ours.dtype.kind != "f":
        assert np.array_equal(ours, theirs), what
        return
    nan = np.isnan(ours)
    assert np.array_equal(nan, np.isnan(theirs)), what
    assert np.array_equal(ours[~nan].view(np.uint64), theirs[~nan].view(np.uint64)), what


def assert_same_results(ours: Result, theirs: Result) -> None:
    for side in ("entries", "exits"):
        for field in Fills.__dataclass_fields__:
            a = getattr(getattr(ours, side), field)
            b = getattr(getattr(theirs, side), field)
            assert_same_bits(a, b, f"{side}.{field}")
    for field in ("equity", "in_position", "highest", "lowest"):
        assert_same_bits(getattr(ours, field), getattr(theirs, field), field)


@dataclass(frozen=True)
class RandomPanel:
    close: Panel
    high: Panel
    low: Panel
    entry: Mask
    exit_signal: Mask
    start: Rows
    lengths: Rows


def random_panel(rng: np.random.Generator, padded_signals: bool = True) -> RandomPanel:
    """Random walks of random lengths (NaN after each symbol's last bar), a few NaN holes in the
    prices, random signals (also on padding rows unless not `padded_signals`) and start rows."""
    rows, width = int(rng.integers(1, 160)), int(rng.integers(1, 25))
    lengths = rng.integers(1, rows + 1, width)
    lengths[0] = rows
    steps = rng.normal(0.0, rng.uniform(0.005, 0.06), (rows, width))
    close = rng.uniform(1.0, 500.0, width) * np.exp(np.cumsum(steps, axis=0))
    high = close * (1.0 + np.abs(rng.normal(0.0, 0.01, close.shape)))
    low = close * (1.0 - np.abs(rng.normal(0.0, 0.01, close.shape)))
    for panel, share in ((close, 0.01), (high, 0.02), (low, 0.02)):
        panel[rng.random(close.shape) < share] = np.nan
    padding = np.arange(rows)[:, None] >= lengths[None, :]
    for panel in (close, high, low):
        panel[padding] = np.nan
    entry = rng.random(close.shape) < rng.uniform(0.02, 0.5)
    exit_signal = rng.random(close.shape) < rng.uniform(0.02, 0.5)
    if not padded_signals:
        entry[padding] = exit_signal[padding] = False
    start = rng.integers(0, lengths + 1)
    return RandomPanel(close, high, low, entry, exit_signal, start.astype(np.int64), lengths)


def random_rules(rng: np.random.Generator, on: tuple[bool, bool, bool]) -> ExitRules:
    stop, trail, take = (float(rng.uniform(0.01, 0.15)) if o else None for o in on)
    return ExitRules(stop_loss=stop, trailing_stop=trail, take_profit=take)


def random_costs(rng: np.random.Generator) -> Costs:
    if rng.random() < 0.25:
        return FREE
    return Costs(
        initial_investment=float(rng.uniform(100.0, 1e6)),
        fee=float(rng.uniform(0.0, 0.01)),
        slippage=float(rng.uniform(0.0, 0.01)),
    )


RULES_ON = list(itertools.product((False, True), repeat=3))


@pytest.mark.parametrize("on", RULES_ON, ids=lambda on: "".join("x" if o else "-" for o in on))
def test_the_compiled_engine_equals_the_numpy_engine_bit_for_bit_on_random_panels(
    on: tuple[bool, bool, bool],
) -> None:
    rng = np.random.default_rng([11, *on])
    for _ in range(25):
        p = random_panel(rng)
        rules, costs = random_rules(rng, on), random_costs(rng)
        args = (p.close, p.high, p.low, p.entry, p.exit_signal, p.start, rules, costs)
        ours, theirs = backtest(*args), numpy_engine.backtest(*args)
        assert_same_results(ours, theirs)


HAND_CHECKED = {
    "winning_trade": ([10, 11, 12, 13, 12], [1], [3], ExitRules(), FREE, 0),
    "losing_trade": ([10, 10, 8, 8, 8], [0], [2], ExitRules(), FREE, 0),
    "stop_loss": ([100, 95, 90, 85, 95], [0], [], ExitRules(stop_loss=0.12), FREE, 0),
    "trailing_stop": ([100, 120, 111, 110, 130], [0], [], ExitRules(trailing_stop=0.08), FREE, 0),
    "take_profit": ([100, 110, 120, 125], [0], [], ExitRules(take_profit=0.20), FREE, 0),
    "stop_before_signal": ([100, 80, 80], [0], [1], ExitRules(stop_loss=0.1), FREE, 0),
    "fees_and_slippage": ([10, 10, 20], [0], [2], ExitRules(), Costs(1_000.0, 0.01, 0.02), 0),
    "open_at_the_end": ([10, 10, 12, 15], [1], [], ExitRules(), FREE, 0),
    "window_start": ([10, 11, 12, 13, 14], [0, 3], [], ExitRules(), FREE, 1),
    "exit_blocks_entry": ([10, 11, 12, 13, 14], [0, 2], [2], ExitRules(), FREE, 0),
}


@pytest.mark.parametrize("case", HAND_CHECKED.values(), ids=HAND_CHECKED.keys())
def test_the_compiled_engine_equals_the_numpy_engine_on_the_hand_checked_frames(
    case: tuple[list[float], list[int], list[int], ExitRules, Costs, int],
) -> None:
    closes, entries, exits, rules, costs, start = case
    c = np.array(closes, dtype=float)[:, None]
    entry = np.zeros(c.shape, bool)
    exit_signal = np.zeros(c.shape, bool)
    entry[entries, 0] = True
    exit_signal[exits, 0] = True
    args = (c, c + 1, c - 1, entry, exit_signal, np.array([start]), rules, costs)
    assert_same_results(backtest(*args), numpy_engine.backtest(*args))


def test_the_compiled_engine_equals_the_numpy_engine_on_symbols_side_by_side() -> None:
    close = np.array([[10.0, 20.0], [11.0, 18.0], [12.0, 22.0], [np.nan, 24.0]])
    entry = np.zeros(close.shape, bool)
    entry[0] = True
    args = (close, close, close, entry, ~entry, np.array([0, 0]), ExitRules(), FREE)
    assert_same_results(backtest(*args), numpy_engine.backtest(*args))


def flat_bars(p: RandomPanel) -> tuple[FlatBars, Mask, Mask]:
    """The panel's real bars laid end to end, symbol after symbol, with their signals."""
    real = (np.arange(p.close.shape[0])[:, None] < p.lengths[None, :]).ravel(order="F")

    def flat(panel: NDArray[Cell]) -> NDArray[Cell]:
        return np.ravel(panel, order="F")[real]

    bars = FlatBars(
        close=flat(p.close),
        high=flat(p.high),
        low=flat(p.low),
        offset=np.cumsum(p.lengths) - p.lengths,
        length=p.lengths,
        rows=p.close.shape[0],
    )
    return bars, flat(p.entry), flat(p.exit_signal)


@pytest.mark.parametrize("seed", range(4))
def test_run_figures_equal_the_numpy_equity_metrics_of_the_numpy_equity_curve(seed: int) -> None:
    """Runs on bars laid end to end report the final value, run-up and drawdown that the numpy
    metrics compute on the numpy engine's equity panel."""
    rng = np.random.default_rng(seed)
    for _ in range(25):
        p = random_panel(rng, padded_signals=False)
        rules, costs = random_rules(rng, (True, True, True)), random_costs(rng)
        bars, entry, exit_signal = flat_bars(p)
        columns = np.arange(len(p.lengths))
        runs = run_tasks(bars, entry, exit_signal, columns, p.start, rules, costs)
        panel_run = numpy_engine.backtest(
            p.close, p.high, p.low, p.entry, p.exit_signal, p.start, rules, costs
        )
        last = p.lengths - 1
        start = np.minimum(p.start, last)
        theirs = numpy_engine.equity_metrics(
            panel_run.equity, p.close, start, last, costs.initial_investment
        )
        ours = metrics.equity_frame(
            final=runs.final,
            run_up=runs.run_up,
            drawdown=runs.drawdown,
            first_close=p.close[start, columns],
            last_close=p.close[last, columns],
            initial=costs.initial_investment,
        )
        for name in ours.columns:
            assert_same_bits(ours[name].to_numpy(), theirs[name].to_numpy(), name)
        assert_same_bits(runs.in_position, panel_run.in_position, "in_position")


def test_equity_metrics_of_a_panel_equal_the_numpy_formulas_bit_for_bit() -> None:
    rng = np.random.default_rng(5)
    equity = rng.uniform(1.0, 2e4, (300, 40))
    equity[rng.random(equity.shape) < 0.3] = np.nan
    equity[:, 3] = np.nan
    close = rng.uniform(1.0, 100.0, equity.shape)
    start = rng.integers(0, 150, 40)
    last = rng.integers(150, 300, 40)
    ours = metrics.equity_metrics(equity, close, start, last, 10_000.0)
    theirs = numpy_engine.equity_metrics(equity, close, start, last, 10_000.0)
    assert ours.columns == [*theirs.columns[1:], "column"]
    for name in theirs.columns:
        assert_same_bits(ours[name].to_numpy(), theirs[name].to_numpy(), name)


def test_windows_of_one_symbol_run_as_independent_tasks() -> None:
    """Several tasks on one symbol (the years windows) each start flat from their own row."""
    close = np.array([10.0, 11.0, 12.0, 13.0, 12.0, 14.0])
    entry = np.array([True, False, True, False, True, False])
    exit_signal = np.array([False, True, False, True, False, False])
    bars = FlatBars(close, close + 1, close - 1, np.array([0]), np.array([6]), 6)
    runs = run_tasks(
        bars, entry, exit_signal, np.array([0, 0, 0]), np.array([0, 2, 5]), ExitRules(), FREE
    )
    assert runs.count.tolist() == [3, 2, 0]
    assert runs.trades.entry_row.tolist() == [0, 2, 4, 2, 4]
    assert runs.trades.exit_row.tolist() == [1, 3, -1, 3, -1]
    assert runs.in_position.tolist() == [True, True, False]
    assert runs.final[2] == 10_000.0
    assert runs.first.tolist() == [0, 3, 5]
