"""The oracle: the engine's trades and final equity equal backtesting.py's replay of the same rules,
for fills at the signal bar's close (`trade_on_close=True`) and at the next bar's open (False)."""

from __future__ import annotations

import math
from typing import ClassVar

import numpy as np
import pandas as pd
import pytest
from backtesting import Strategy
from backtesting.lib import FractionalBacktest

from pipelines.simulator.backtests import Prices
from pipelines.simulator.engine import Costs, ExitRules, FlatBars, Mask, backtest, run_tasks
from pipelines.simulator.strategies import AGGRESSIVE, CONSERVATIVE
from pipelines.simulator.strategies import Strategy as Rules
from tests.pipelines.simulator.numpy_signals import NUMPY_SIGNALS

BARS = 1_500


def regime_walk(seed: int, bars: int = BARS) -> pd.DataFrame:
    """A daily random walk whose drift and volatility switch every 150 bars (trends and ranges)."""
    rng = np.random.default_rng(seed)
    drift = np.repeat(rng.normal(0.0, 0.004, bars // 150 + 1), 150)[:bars]
    vol = np.repeat(rng.uniform(0.01, 0.04, bars // 150 + 1), 150)[:bars]
    close = 100.0 * np.exp(np.cumsum(rng.normal(drift, vol)))
    open_ = np.r_[close[0], close[:-1]] * np.exp(rng.normal(0.0, 0.003, bars))
    spread = np.abs(rng.normal(0.0, vol, bars))
    high = np.maximum(open_, close) * (1.0 + spread)
    low = np.minimum(open_, close) * (1.0 - spread)
    index = pd.date_range("2020-01-01", periods=bars, freq="D")
    return pd.DataFrame(
        {"Open": open_, "High": high, "Low": low, "Close": close, "Volume": 1.0}, index=index
    )


class Replay(Strategy):
    """Buys all-in on the precomputed entry signal and exits on the rules, at the bar's close or,
    with `next_open`, at the next bar's open (whose open is then the trade's reference price).

    backtesting.py applies its `spread` on the entry leg only; our slippage also worsens the exit
    fill, so the exit leg's cost is charged through the commission callable (`Replay.leg`).
    """

    entry: ClassVar[Mask]
    exit: ClassVar[Mask]
    rules: ClassVar[ExitRules]
    costs: ClassVar[Costs]
    next_open: ClassVar[bool]
    opens: ClassVar[np.ndarray]
    """The unscaled opens and closes: the next open's price relative to this close."""
    closes: ClassVar[np.ndarray]
    leg: ClassVar[dict[str, bool]] = {"exit": False}

    def init(self) -> None:
        self.start_price = math.nan
        self.max_close = math.nan

    def next(self) -> None:
        i = len(self.data) - 1
        close = float(self.data.Close[-1])
        if self.position:
            if self.start_price != self.start_price:  # filled at this bar's open
                self.start_price = self.max_close = float(self.data.Open[-1])
            self.max_close = max(self.max_close, close)
            if self._exits(i, close):
                Replay.leg["exit"] = True
                self.position.close()
        else:
            self.start_price = self.max_close = math.nan
            if self.entry[i]:
                self._enter(i, close)

    def _enter(self, i: int, close: float) -> None:
        price = close * self.opens[i + 1] / self.closes[i] if self.next_open else close
        c = self.costs
        units = math.floor(self.equity / (price * (1 + c.slippage) * (1 + c.fee)))
        Replay.leg["exit"] = False
        self.buy(size=units)
        if not self.next_open:
            self.start_price = self.max_close = close

    def _exits(self, i: int, close: float) -> bool:
        r = self.rules
        return bool(
            (r.stop_loss is not None and close <= self.start_price * (1 - r.stop_loss))
            or (r.trailing_stop is not None and close <= self.max_close * (1 - r.trailing_stop))
            or (r.take_profit is not None and close >= self.start_price * (1 + r.take_profit))
            or self.exit[i]
        )


def commission(costs: Costs):  # type: ignore[no-untyped-def]
    exit_rate = costs.slippage + costs.fee - costs.slippage * costs.fee

    def charge(size: float, price: float) -> float:
        rate = exit_rate if Replay.leg["exit"] else costs.fee
        return abs(size) * price * rate

    return charge


@pytest.mark.filterwarnings("ignore:Some trades remain open:UserWarning")
@pytest.mark.filterwarnings("ignore:DatetimeIndex.dayofweek is deprecated")
@pytest.mark.parametrize("strategy", [AGGRESSIVE, CONSERVATIVE], ids=lambda s: s.name)
@pytest.mark.parametrize(
    "costs",
    [Costs(fee=0.0, slippage=0.0), Costs(fee=0.001, slippage=0.0005)],
    ids=["free", "fees_and_slippage"],
)
@pytest.mark.parametrize("seed", [1, 7])
@pytest.mark.parametrize("market", ["stocks", "crypto"])
@pytest.mark.parametrize("fill", ["close", "next_open"])
def test_backtesting_py_replays_the_same_trades_and_final_value(
    strategy: Rules, costs: Costs, seed: int, market: str, fill: str
) -> None:
    data = regime_walk(seed)
    cols = {k: data[k].to_numpy()[:, None] for k in ("Open", "High", "Low", "Close")}
    prices = Prices(high=cols["High"], low=cols["Low"], close=cols["Close"])
    signals = NUMPY_SIGNALS[strategy.name](prices)
    entry, exit_signal = signals.entry.copy(), signals.exit.copy()
    # backtesting.py cannot fill an order placed on its last bar (nor act on bar 0)
    entry[[0, -1]] = exit_signal[[0, -1]] = False
    ours = backtest(
        cols["Close"],
        cols["High"],
        cols["Low"],
        entry,
        exit_signal,
        np.array([0]),
        strategy.rules(market),
        costs,
        open_=cols["Open"],
        fill=fill,
    )
    Replay.entry, Replay.exit = entry[:, 0], exit_signal[:, 0]
    Replay.rules, Replay.costs = strategy.rules(market), costs
    Replay.next_open = fill == "next_open"
    Replay.opens, Replay.closes = cols["Open"][:, 0], cols["Close"][:, 0]
    oracle = FractionalBacktest(
        data,
        Replay,
        cash=costs.initial_investment,
        spread=costs.slippage,
        commission=commission(costs),
        trade_on_close=fill == "close",
        exclusive_orders=False,
        finalize_trades=False,
        fractional_unit=1e-9,
    ).run()
    trades = oracle["_trades"]
    assert len(ours.exits.row) >= 5, "the series must exercise the strategy"
    assert ours.entries.row[: len(trades)].tolist() == trades["EntryBar"].tolist()
    assert ours.exits.row.tolist() == trades["ExitBar"].tolist()
    np.testing.assert_allclose(ours.entries.price[: len(trades)], trades["EntryPrice"], rtol=1e-9)
    exit_fill = trades["ExitPrice"].to_numpy() * (1 - costs.slippage)
    np.testing.assert_allclose(ours.exits.price, exit_fill, rtol=1e-9)
    assert ours.equity[-1, 0] == pytest.approx(oracle["Equity Final [$]"], rel=1e-6)


FRACTIONAL_UNIT = 1e-9


class DividendReplay(Replay):
    """`Replay`, credited each ex-date's dividend for the units held over the close before it
    (a trade entered at or before the bar before and not exited before the ex-date's bar), the
    cash kept until the next entry. backtesting.py has no dividends: the test adds them to the
    broker's cash itself."""

    dividends: ClassVar[np.ndarray]

    def next(self) -> None:
        i = len(self.data) - 1
        paid = self.dividends[i]
        if paid > 0:
            trades = [*self.trades, *self.closed_trades]
            held = sum(
                t.size
                for t in trades
                if t.entry_bar <= i - 1 and (t.exit_bar is None or t.exit_bar > i - 1)
            )
            self._broker._cash += held * FRACTIONAL_UNIT * paid
        super().next()


@pytest.mark.filterwarnings("ignore:Some trades remain open:UserWarning")
@pytest.mark.filterwarnings("ignore:DatetimeIndex.dayofweek is deprecated")
@pytest.mark.parametrize("strategy", [AGGRESSIVE, CONSERVATIVE], ids=lambda s: s.name)
@pytest.mark.parametrize("seed", [1, 7])
@pytest.mark.parametrize("fill", ["close", "next_open"])
def test_dividends_credited_while_held_match_backtesting_py_with_the_same_cash(
    strategy: Rules, seed: int, fill: str
) -> None:
    """decisions.md, Corporate actions: a trade is credited units x the dividend of every ex-date
    inside it, for both fills; the final equity and the trades equal backtesting.py's run with
    the same cash added, and each trade's dividends are its units x the ex-dates it held over."""
    costs = Costs()
    data = regime_walk(seed)
    cols = {k: data[k].to_numpy()[:, None] for k in ("Open", "High", "Low", "Close")}
    dividend = np.zeros(BARS)
    dividend[21::63] = 0.01 * cols["Close"][20::63, 0][: len(dividend[21::63])]
    prices = Prices(high=cols["High"], low=cols["Low"], close=cols["Close"])
    signals = NUMPY_SIGNALS[strategy.name](prices)
    entry, exit_signal = signals.entry.copy(), signals.exit.copy()
    entry[[0, -1]] = exit_signal[[0, -1]] = False
    rules = strategy.rules("stocks")
    ours = backtest(
        cols["Close"],
        cols["High"],
        cols["Low"],
        entry,
        exit_signal,
        np.array([0]),
        rules,
        costs,
        open_=cols["Open"],
        fill=fill,
        dividend=dividend[:, None],
    )
    runs = run_tasks(
        FlatBars(
            close=cols["Close"][:, 0],
            high=cols["High"][:, 0],
            low=cols["Low"][:, 0],
            offset=np.array([0]),
            length=np.array([BARS]),
            rows=BARS,
            open=cols["Open"][:, 0],
            dividend=dividend,
        ),
        entry[:, 0],
        exit_signal[:, 0],
        np.array([0]),
        np.array([0]),
        rules,
        costs,
        fill=fill,
    )
    DividendReplay.entry, DividendReplay.exit = entry[:, 0], exit_signal[:, 0]
    DividendReplay.rules, DividendReplay.costs = rules, costs
    DividendReplay.next_open = fill == "next_open"
    DividendReplay.opens, DividendReplay.closes = cols["Open"][:, 0], cols["Close"][:, 0]
    DividendReplay.dividends = dividend
    oracle = FractionalBacktest(
        data,
        DividendReplay,
        cash=costs.initial_investment,
        spread=costs.slippage,
        commission=commission(costs),
        trade_on_close=fill == "close",
        exclusive_orders=False,
        finalize_trades=False,
        fractional_unit=FRACTIONAL_UNIT,
    ).run()
    trades = oracle["_trades"]
    t = runs.trades
    assert (t.dividends > 0).sum() >= 3, "the series must hold over ex-dates"
    assert ours.entries.row[: len(trades)].tolist() == trades["EntryBar"].tolist()
    assert ours.exits.row.tolist() == trades["ExitBar"].tolist()
    np.testing.assert_allclose(t.units[: len(trades)], trades["Size"], rtol=1e-6)
    assert ours.equity[-1, 0] == pytest.approx(oracle["Equity Final [$]"], rel=1e-6)
    exit_row = np.where(t.exit_row >= 0, t.exit_row, BARS)
    held_over = [dividend[e + 1 : x + 1].sum() for e, x in zip(t.entry_row, exit_row, strict=True)]
    np.testing.assert_allclose(t.dividends, t.units * np.array(held_over), rtol=1e-12)
