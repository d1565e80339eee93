"""The backtest kernel on tiny hand-checkable frames: fills at the signal bar's close or the next
bar's open, costs, stops."""

from __future__ import annotations

import numpy as np
import pytest

from pipelines.simulator.engine import (
    DELISTED,
    SIGNAL,
    STOP_LOSS,
    TAKE_PROFIT,
    TRAILING_STOP,
    Costs,
    ExitRules,
    Result,
    backtest,
)

FREE = Costs(initial_investment=10_000.0, fee=0.0, slippage=0.0)


def run(
    close: list[float],
    entries: list[int],
    exits: tuple[int, ...] = (),
    rules: ExitRules | None = None,
    costs: Costs = FREE,
    start: int = 0,
    opens: list[float] | None = None,
) -> Result:
    """One symbol; high = close + 1, low = close - 1; signals on the listed bars; with `opens`,
    filled at the next bar's open."""
    c = np.array(close, dtype=float)[:, None]
    entry = np.zeros(c.shape, bool)
    exit_signal = np.zeros(c.shape, bool)
    entry[list(entries), 0] = True
    exit_signal[list(exits), 0] = True
    starts = np.array([start])
    if opens is None:
        return backtest(c, c + 1, c - 1, entry, exit_signal, starts, rules or ExitRules(), costs)
    o = np.array(opens, dtype=float)[:, None]
    return backtest(
        c, c + 1, c - 1, entry, exit_signal, starts, rules or ExitRules(), costs, o, "next_open"
    )


def test_a_winning_trade_buys_and_sells_at_the_signal_closes() -> None:
    r = run([10, 11, 12, 13, 12], entries=[1], exits=(3,))
    assert r.entries.row.tolist() == [1]
    assert r.exits.row.tolist() == [3]
    assert r.entries.price[0] == 11
    assert r.exits.price[0] == 13
    assert r.exits.reason.tolist() == [SIGNAL]
    assert r.equity[-1, 0] == pytest.approx(10_000 / 11 * 13)
    assert r.exits.highest[0] == 14  # highest high of bars 1..3
    assert r.exits.lowest[0] == 10  # lowest low of bars 1..3


def test_a_losing_trade_ends_below_the_initial_investment() -> None:
    r = run([10, 10, 8, 8, 8], entries=[0], exits=(2,))
    assert r.equity[-1, 0] == pytest.approx(8_000)


def test_stop_loss_exits_at_the_first_close_at_or_below_the_stop() -> None:
    r = run([100, 95, 90, 85, 95], entries=[0], rules=ExitRules(stop_loss=0.12))
    assert r.exits.row.tolist() == [3]  # 85 <= 88
    assert r.exits.reason.tolist() == [STOP_LOSS]


def test_trailing_stop_follows_the_highest_close_since_entry() -> None:
    r = run([100, 120, 111, 110, 130], entries=[0], rules=ExitRules(trailing_stop=0.08))
    assert r.exits.row.tolist() == [3]  # 110 <= 120 x 0.92 = 110.4; 111 was not
    assert r.exits.reason.tolist() == [TRAILING_STOP]


def test_take_profit_exits_when_the_close_reaches_the_target() -> None:
    r = run([100, 110, 120, 125], entries=[0], rules=ExitRules(take_profit=0.20))
    assert r.exits.row.tolist() == [2]
    assert r.exits.reason.tolist() == [TAKE_PROFIT]


def test_a_stop_wins_over_a_signal_on_the_same_bar() -> None:
    r = run([100, 80, 80], entries=[0], exits=(1,), rules=ExitRules(stop_loss=0.1))
    assert r.exits.reason.tolist() == [STOP_LOSS]


def test_fees_and_slippage_are_charged_on_both_legs() -> None:
    costs = Costs(initial_investment=1_000.0, fee=0.01, slippage=0.02)
    r = run([10, 10, 20], entries=[0], exits=(2,), costs=costs)
    units = 1_000 / (10 * 1.02 * 1.01)  # all the cash buys at 10.2, the 1% fee included
    assert r.entries.price[0] == pytest.approx(10.2)
    assert r.entries.units[0] == pytest.approx(units)
    assert r.entries.fee[0] == pytest.approx(units * 10.2 * 0.01)
    assert r.exits.price[0] == pytest.approx(19.6)
    assert r.exits.fee[0] == pytest.approx(units * 19.6 * 0.01)
    assert r.equity[-1, 0] == pytest.approx(units * 19.6 * 0.99)


def test_an_open_trade_at_the_end_is_marked_at_the_last_close() -> None:
    r = run([10, 10, 12, 15], entries=[1])
    assert r.in_position.tolist() == [True]
    assert len(r.exits.row) == 0
    assert r.equity[-1, 0] == pytest.approx(15_000)
    assert r.highest[0] == 16
    assert r.lowest[0] == 9


def test_signals_before_the_window_start_are_ignored() -> None:
    r = run([10, 11, 12, 13, 14], entries=[0, 3], start=1)
    assert r.entries.row.tolist() == [3]
    assert np.isnan(r.equity[0, 0])
    assert r.equity[1, 0] == 10_000


def test_one_exit_bar_blocks_its_own_entry_signal() -> None:
    r = run([10, 11, 12, 13, 14], entries=[0, 2], exits=(2,))
    assert r.entries.row.tolist() == [0]
    assert r.exits.row.tolist() == [2]


def test_symbols_run_independently_side_by_side() -> None:
    close = np.array([[10.0, 20.0], [11.0, 18.0], [12.0, 22.0], [np.nan, 24.0]])
    entry = np.zeros(close.shape, bool)
    entry[0] = True
    exit_signal = np.zeros(close.shape, bool)
    r = backtest(close, close, close, entry, exit_signal, np.array([0, 0]), ExitRules(), FREE)
    assert r.equity[2, 0] == pytest.approx(12_000)
    assert np.isnan(r.equity[3, 0])
    assert r.equity[3, 1] == pytest.approx(12_000)


OPENS = [9.5, 10.5, 11.5, 12.5, 12.5]
"""Opens between the closes [10, 11, 12, 13, 12] (inside each bar's high and low)."""


def test_next_open_fills_buy_and_sell_at_the_open_after_each_signal() -> None:
    r = run([10, 11, 12, 13, 12], entries=[1], exits=(3,), opens=OPENS)
    assert r.entries.row.tolist() == [2]
    assert r.exits.row.tolist() == [4]
    assert r.entries.price[0] == 11.5
    assert r.exits.price[0] == 12.5
    assert r.exits.reason.tolist() == [SIGNAL]
    assert r.equity[-1, 0] == pytest.approx(10_000 / 11.5 * 12.5)
    assert r.exits.highest[0] == 14  # highest high of bars 2..4
    assert r.exits.lowest[0] == 11


def test_next_open_fills_charge_slippage_and_fees_on_the_open() -> None:
    costs = Costs(initial_investment=10_000.0, fee=0.01, slippage=0.02)
    r = run([10, 11, 12, 13, 12], entries=[1], exits=(3,), opens=OPENS, costs=costs)
    bought = 11.5 * 1.02
    units = 10_000 / (bought * 1.01)
    assert r.entries.price[0] == pytest.approx(bought)
    assert r.entries.fee[0] == pytest.approx(units * bought * 0.01)
    sold = 12.5 * 0.98
    assert r.equity[-1, 0] == pytest.approx(units * sold * 0.99)


def test_an_entry_signal_on_the_last_bar_is_pending_not_a_trade() -> None:
    r = run([10, 11, 12, 13, 12], entries=[4], opens=OPENS)
    assert r.entries.row.tolist() == []
    assert r.equity[-1, 0] == 10_000


def test_an_exit_on_the_last_bar_leaves_the_trade_open_until_the_next_open() -> None:
    r = run([10, 11, 12, 13, 12], entries=[0], exits=(4,), opens=OPENS)
    assert r.entries.row.tolist() == [1]
    assert r.exits.row.tolist() == []
    assert r.in_position.tolist() == [True]


def test_next_open_rules_measure_from_the_entry_open() -> None:
    # bought at the open of bar 1 (100): the stop at 88 fires on the close of bar 2 (87),
    # the sale fills at the open of bar 3 (86); a close fill would have used 101 as reference
    r = run(
        [100, 101, 87, 85, 95],
        entries=[0],
        rules=ExitRules(stop_loss=0.12),
        opens=[100, 100, 90, 86, 90],
    )
    assert r.entries.price.tolist() == [100]
    assert r.exits.row.tolist() == [3]
    assert r.exits.price.tolist() == [86]
    assert r.exits.reason.tolist() == [STOP_LOSS]


def test_next_open_may_buy_again_on_the_close_of_the_bar_it_sold_at_the_open() -> None:
    r = run([10, 11, 12, 13, 12], entries=[0, 2], exits=(1,), opens=[10, 10, 11, 12, 12])
    assert r.entries.row.tolist() == [1, 3]
    assert r.exits.row.tolist() == [2]


def delisted_run(
    close: list[float], entries: list[int], opens: list[float] | None = None
) -> Result:
    """`run` of a symbol whose last bar is its last: a delisting follows it."""
    c = np.array(close, dtype=float)[:, None]
    entry = np.zeros(c.shape, bool)
    entry[entries, 0] = True
    fill = "close" if opens is None else "next_open"
    o = None if opens is None else np.array(opens, dtype=float)[:, None]
    nothing = np.zeros(c.shape, bool)
    return backtest(
        c, c + 1, c - 1, entry, nothing, np.array([0]), ExitRules(), FREE, o, fill,
        delisted=np.array([True]),
    )  # fmt: skip


@pytest.mark.parametrize("fill", ["close", "next_open"])
def test_a_trade_open_at_a_delisting_closes_at_the_last_close(fill: str) -> None:
    """decisions.md, Corporate actions: exit_reason `delisted`, at the last bar's close whatever
    the fill (there is no next open)."""
    opens = [10.0, 10.5, 11.5, 12.5, 13.5] if fill == "next_open" else None
    r = delisted_run([10.0, 11.0, 12.0, 13.0, 14.0], entries=[1], opens=opens)
    assert r.exits.row.tolist() == [4]
    assert r.exits.reason.tolist() == [DELISTED]
    assert r.exits.price[0] == 14.0
    assert not r.in_position[0]
    entry_price = 11.0 if fill == "close" else 11.5
    assert r.equity[-1, 0] == pytest.approx(10_000 / entry_price * 14.0)


@pytest.mark.parametrize("fill", ["close", "next_open"])
def test_nothing_enters_on_a_delisted_symbols_last_bar(fill: str) -> None:
    opens = [10.0] * 5 if fill == "next_open" else None
    r = delisted_run([10.0] * 5, entries=[4], opens=opens)
    assert r.entries.row.tolist() == []
    assert r.equity[-1, 0] == 10_000.0


def test_a_symbol_still_listed_keeps_its_trade_open() -> None:
    r = run([10.0, 11.0, 12.0], entries=[1])
    assert r.exits.row.tolist() == []
    assert r.in_position[0]
