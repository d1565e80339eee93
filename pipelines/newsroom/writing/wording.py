"""The wording check of a written text: it names no symbol and makes no claim its facts do not hold.

The number check (`numbers.unsupported`) keeps a model from citing a figure it was not given; this
keeps it from naming another instrument (an all-caps ticker the facts do not hold, e.g. one a
quoted headline asked it to promote) or from stating a reading the facts contradict (`oversold`
with an RSI of 55, an `uptrend` in a down segment, a `sell signal` no strategy gave).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable

from pipelines.newsroom.writing.facts import Facts, MarketFacts

_TICKER = re.compile(r"(?<![\w$])([A-Z][A-Z0-9]{1,9}|[0-9][A-Z0-9]*[A-Z][A-Z0-9]*)(?![\w])")
"""An all-caps word of 2 to 10 letters and digits with at least one letter: how a symbol is named."""
TERMS = frozenset({"RSI", "MACD", "SMA", "EMA", "USD", "UTC", "ATR", "ADX", "OBV", "VWAP", "ROC"})
"""Abbreviations of the facts' own readings, which any text may use."""


def _word(*forms: str) -> re.Pattern[str]:
    return re.compile(r"\b(?:" + "|".join(forms) + r")\b", re.IGNORECASE)


def _acts(facts: Facts, action: str) -> bool:
    return action in (facts.aggressive_action, facts.conservative_action)


CLAIMS: tuple[tuple[str, re.Pattern[str], Callable[[Facts], bool]], ...] = (
    ("overbought", _word("overbought"), lambda f: f.rsi is not None and f.rsi >= 70),
    ("oversold", _word("oversold"), lambda f: f.rsi is not None and f.rsi <= 30),
    ("an uptrend", _word("up-?trend", "upward trend", "bullish trend"), lambda f: f.trend == "up"),
    (
        "a downtrend",
        _word("down-?trend", "downward trend", "bearish trend"),
        lambda f: f.trend == "down",
    ),
    ("a buy signal", _word("buy signal", "signals? a buy"), lambda f: _acts(f, "Buy")),
    ("a sell signal", _word("sell signal", "signals? a sell"), lambda f: _acts(f, "Sell")),
)
"""(what the text claims, how it says so, whether the facts hold it)."""


def named_symbols(text: str, verbatim: Iterable[str]) -> list[str]:
    """The all-caps symbols `text` names outside the strings it may quote whole."""
    for quoted in sorted(verbatim, key=len, reverse=True):
        if quoted:
            text = text.replace(quoted, " ")
    return [m.group(1) for m in _TICKER.finditer(text)]


def _allowed(texts: Iterable[str]) -> set[str]:
    return {*TERMS, *(m.group(1) for text in texts for m in _TICKER.finditer(text))}


def unsupported_wording(text: str, facts: Facts) -> list[str]:
    """What an analysis names or claims beyond its facts (empty when its wording is sound)."""
    allowed = _allowed([facts.symbol, facts.name])  # a headline's tickers only inside its quote
    found = [f"names {s}" for s in named_symbols(text, facts.stories) if s not in allowed]
    found += [
        f"claims {claim}" for claim, said, holds in CLAIMS if said.search(text) and not holds(facts)
    ]
    return found


def unsupported_market_wording(text: str, facts: MarketFacts) -> list[str]:
    """What a market summary names beyond its facts: a symbol not among its movers."""
    allowed = _allowed([m.symbol for m in (*facts.leaders, *facts.laggards)])
    return [f"names {s}" for s in named_symbols(text, facts.stories) if s not in allowed]
