"""The `aggressive` and `conservative` strategies: their exit rules and what their entry means.

Their entry and exit signals are computed bar by bar in `pipelines.simulator.signals`.

The exits' distances are stated in units of a market's typical daily volatility, so that a stop
means the same thing in every market: one fixed percentage is a few standard deviations of a
stock's daily move, ordinary noise for a coin and out of reach for a currency pair. Traders size
stops to volatility the same way (ATR-based stops); docs/trade-simulator.md gives the figures.
"""

from __future__ import annotations

from dataclasses import dataclass

from pipelines.catalog import MARKETS, STRATEGIES
from pipelines.simulator.engine import ExitRules

TYPICAL_VOLATILITY: dict[str, float] = {
    "crypto": 0.04,
    "stocks": 0.02,
    "commodities": 0.0175,
    "forex": 0.0055,
}
"""A market's typical daily volatility of returns (the middle of real markets' ranges: crypto 3 to
5 %, stocks 1 to 3 %, commodities 1 to 2.5 %, forex 0.3 to 0.8 %): the unit of the exits."""


@dataclass(frozen=True)
class Exits:
    """Exit distances in units of the market's typical daily volatility; None disables one."""

    stop_loss: float | None = None
    trailing_stop: float | None = None
    take_profit: float | None = None

    def rules(self, market: str) -> ExitRules:
        """The distances as fractions of a price in `market` (rounded to 0.01 %)."""
        unit = TYPICAL_VOLATILITY[market]

        def fraction(distance: float | None) -> float | None:
            return None if distance is None else round(distance * unit, 4)

        return ExitRules(
            stop_loss=fraction(self.stop_loss),
            trailing_stop=fraction(self.trailing_stop),
            take_profit=fraction(self.take_profit),
        )


@dataclass(frozen=True)
class Strategy:
    name: str
    exits: Exits
    entry_reason: str
    """What the entry signal means, in words (the current action's message)."""

    def rules(self, market: str) -> ExitRules:
        """The exit rules in `market` (stocks: 8 % trailing stop, 20 % take profit; 12 % stop)."""
        return self.exits.rules(market)


AGGRESSIVE = Strategy(
    name="aggressive",
    exits=Exits(trailing_stop=4.0, take_profit=10.0),
    entry_reason="EMA(10) crossed above EMA(30) with RSI(14) below 70",
)
CONSERVATIVE = Strategy(
    name="conservative",
    exits=Exits(stop_loss=6.0),
    entry_reason="close above SMA(200), EMA(20) above EMA(50) and ADX(14) above 20",
)
BY_NAME: dict[str, Strategy] = {s.name: s for s in (AGGRESSIVE, CONSERVATIVE)}
if tuple(BY_NAME) != STRATEGIES:  # the catalog names them; this module defines each one
    raise ImportError(f"strategies defined {tuple(BY_NAME)} differ from the catalog's {STRATEGIES}")
if set(TYPICAL_VOLATILITY) != set(MARKETS):
    raise ImportError(f"typical volatility of {sorted(TYPICAL_VOLATILITY)}, markets {MARKETS}")
