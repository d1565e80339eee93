"""The facts an analysis or a market summary may cite: typed, gathered from the warehouse."""

from __future__ import annotations

import msgspec

RSI_PERIOD = 14
SMA_PERIODS = (50, 200)
WEEK_DAYS = 7
MONTH_DAYS = 30
WINDOWS: tuple[int, ...] = (WEEK_DAYS, RSI_PERIOD, MONTH_DAYS, *SMA_PERIODS)
"""The windows the facts are measured over; a text may name them ("7 days", "50-day average")."""


class Facts(msgspec.Struct, frozen=True, kw_only=True):
    """One crypto instrument on one day. Percent changes are percents (3.2 = +3.2 %)."""

    symbol: str
    name: str
    date: str
    """The analysed day, ISO `YYYY-MM-DD` (the symbol's latest bar)."""
    close: float
    change_1d: float | None = None
    change_7d: float | None = None
    change_30d: float | None = None
    rsi: float | None = None
    """RSI(14), 0..100."""
    macd_histogram: float | None = None
    """MACD(12, 26, 9) histogram: only its sign is written."""
    sma_50: float | None = None
    sma_200: float | None = None
    trend: str | None = None
    """The running trend segment: up, down or neutral."""
    trend_strength: str | None = None
    """weak, moderate or strong: |mean signal| of the running segment."""
    trend_days: int | None = None
    aggressive_action: str | None = None
    conservative_action: str | None = None
    briefs_today: int = 0
    briefs_7d: int = 0
    sentiment_today: float | None = None
    """Mean sentiment (-5..+5) of the day's briefs naming the symbol; None without scored briefs."""
    sentiment_7d: float | None = None
    stories: tuple[str, ...] = ()
    """Titles of the most notable briefs of the last 7 days, most notable first (at most 3)."""


class Mover(msgspec.Struct, frozen=True):
    """A symbol and its 1-day percent change."""

    symbol: str
    change_1d: float


class MarketFacts(msgspec.Struct, frozen=True, kw_only=True):
    """The crypto market on one day."""

    market: str
    date: str
    instruments: int
    """Symbols with a bar on `date` and on the day before."""
    advancers: int
    decliners: int
    unchanged: int
    leaders: tuple[Mover, ...] = ()
    """Up to 3 risers, largest 1-day change first."""
    laggards: tuple[Mover, ...] = ()
    """Up to 3 fallers, largest 1-day fall first."""
    briefs: int = 0
    sentiment: float | None = None
    bullish: int = 0
    """Briefs of the day with sentiment >= 1."""
    bearish: int = 0
    """Briefs of the day with sentiment <= -1."""
    stories: tuple[str, ...] = ()
