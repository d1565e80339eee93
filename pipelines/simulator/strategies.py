"""The `aggressive` and `conservative` strategies: their exit rules and what their entry means.

Their entry and exit signals are computed bar by bar in `pipelines.simulator.signals`.
"""

from __future__ import annotations

from dataclasses import dataclass

from pipelines.catalog import STRATEGIES
from pipelines.simulator.engine import ExitRules


@dataclass(frozen=True)
class Strategy:
    name: str
    rules: ExitRules
    entry_reason: str
    """What the entry signal means, in words (the current action's message)."""


AGGRESSIVE = Strategy(
    name="aggressive",
    rules=ExitRules(trailing_stop=0.08, take_profit=0.20),
    entry_reason="EMA(10) crossed above EMA(30) with RSI(14) below 70",
)
CONSERVATIVE = Strategy(
    name="conservative",
    rules=ExitRules(stop_loss=0.12),
    entry_reason="close above SMA(200), EMA(20) above EMA(50) and ADX(14) above 20",
)
BY_NAME: dict[str, Strategy] = {s.name: s for s in (AGGRESSIVE, CONSERVATIVE)}
if tuple(BY_NAME) != STRATEGIES:  # the catalog names them; this module defines each one
    raise ImportError(f"strategies defined {tuple(BY_NAME)} differ from the catalog's {STRATEGIES}")
