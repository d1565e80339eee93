"""Metrics on hand-checkable trades, the Buy/Sell/Hold/Stay rules, and the `years` windows."""

from __future__ import annotations

from datetime import date, timedelta

import numpy as np
import polars as pl
import pytest

from pipelines.simulator import metrics, scoring
from pipelines.simulator.backtests import (
    Simulation,
    _trade_frame,
    load_market,
    window_start,
    years_available,
)
from pipelines.simulator.engine import Costs, ExitRules, run_tasks

FREE = Costs(fee=0.0, slippage=0.0)


def bars(closes: dict[str, list[float]], first: date = date(2024, 1, 1)) -> pl.DataFrame:
    rows = [
        {
            "symbol": s,
            "date": first + timedelta(days=i),
            "open": c,
            "high": c + 1,
            "low": c - 1,
            "close": c,
            "volume": 1.0,
        }
        for s, cs in closes.items()
        for i, c in enumerate(cs)
    ]
    return pl.DataFrame(rows)


def test_equity_metrics_give_final_value_buy_and_hold_drawdown_and_run_up() -> None:
    equity = np.array([[10_000.0], [12_000.0], [9_000.0], [11_000.0]])
    close = np.array([[10.0], [12.0], [9.0], [20.0]])
    m = metrics.equity_metrics(equity, close, np.array([0]), np.array([3]), 10_000.0).row(
        0, named=True
    )
    assert m["final_value"] == 11_000
    assert m["profit_percent"] == pytest.approx(10.0)
    assert m["buy_and_hold_profit_percent"] == pytest.approx(100.0)
    assert m["peak_loss"] == pytest.approx(-25.0)  # 12,000 -> 9,000
    assert m["peak_profit"] == pytest.approx(100 * (11_000 / 9_000 - 1))  # trough 9,000 -> 11,000


def test_trade_metrics_count_closed_trades_and_average_wins_and_losses() -> None:
    trades = pl.DataFrame(
        {
            "column": [0, 0, 0, 0],
            "closed": [True, True, True, False],
            "profit": [100.0, -50.0, 300.0, 999.0],
            "profit_percent": [1.0, -0.5, 3.0, 9.99],
            "days_in_trade": [2, 4, 6, 100],
        }
    )
    m = metrics.trade_metrics(trades).row(0, named=True)
    assert (m["total_trades"], m["profitable_trades"], m["unprofitable_trades"]) == (3, 2, 1)
    assert m["average_profit"] == 200.0
    assert m["average_profit_percent"] == 2.0
    assert m["average_loss"] == -50.0
    assert m["average_trade_duration"] == 4.0


def test_annualized_return_compounds_over_the_window_days() -> None:
    part = pl.DataFrame(
        {
            "column": [0],
            "final_value": [12_100.0],
            "initial_investment": [10_000.0],
            "start_date": [date(2022, 1, 1)],
            "end_date": [date(2022, 1, 1) + timedelta(days=731)],
        }
    )
    s = metrics.summaries(
        part,
        metrics.trade_metrics(
            pl.DataFrame(
                schema={
                    "column": pl.Int64,
                    "closed": pl.Boolean,
                    "profit": pl.Float64,
                    "profit_percent": pl.Float64,
                    "days_in_trade": pl.Int32,
                }
            )
        ),
    ).row(0, named=True)
    assert s["annualized_return"] == pytest.approx(100 * (1.21 ** (365.25 / 731) - 1))
    assert s["total_trades"] == 0
    assert s["profitable_trade_percent"] is None


def simulation(closes: dict[str, list[float]], entries: list[int], exits: list[int]) -> Simulation:
    """Every symbol gets the same entry/exit bars through the full-history run."""
    market = load_market(bars(closes))
    columns = np.arange(len(market.symbols))
    entry = np.zeros(len(market.days), bool)
    exit_signal = np.zeros(len(market.days), bool)
    entry[(market.bars.offset[:, None] + np.array(entries, np.int64)).ravel()] = True
    exit_signal[(market.bars.offset[:, None] + np.array(exits, np.int64)).ravel()] = True
    start = np.zeros(len(market.symbols), np.int64)
    runs = run_tasks(market.bars, entry, exit_signal, columns, start, ExitRules(), FREE)
    empty = pl.DataFrame()
    return Simulation(
        empty, empty, {"aggressive": _trade_frame(market, runs, columns, "close")}, market, empty
    )


@pytest.mark.parametrize(
    ("entries", "exits", "action"),
    [([4], [], "Buy"), ([1], [4], "Sell"), ([1], [], "Hold"), ([1], [2], "Stay"), ([], [], "Stay")],
)
def test_the_action_is_what_the_strategy_did_on_the_latest_bar(
    entries: list[int], exits: list[int], action: str
) -> None:
    sim = simulation({"AAA": [10, 11, 12, 13, 14]}, entries, exits)
    row = scoring.simulated_actions(sim).row(0, named=True)
    assert row["action"] == action
    assert row["date"] == date(2024, 1, 5)
    assert row["message"].startswith(action if action != "Stay" else "Stay out")


def test_years_windows_start_that_many_calendar_years_before_the_last_day() -> None:
    days = (date(2024, 3, 1) - date(2021, 6, 1)).days + 1
    market = load_market(bars({"AAA": [10.0] * days}, first=date(2021, 6, 1)))
    assert years_available(market).tolist() == [3]  # 2.75 years of history
    start = window_start(market, 1)[0]
    assert date(2021, 6, 1) + timedelta(days=int(start)) == date(2023, 3, 1)
    assert window_start(market, 3)[0] == 0  # longer than the history: the full history
