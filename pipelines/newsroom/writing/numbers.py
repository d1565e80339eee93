"""Numbers for people, and the number check: every number a text cites must be one of its facts'."""

from __future__ import annotations

import re
from collections.abc import Iterable
from datetime import date

from pipelines.newsroom.writing.facts import WINDOWS, Facts, MarketFacts

_NUMBER = re.compile(r"(?<![\w.])([+\-−]?)\$?(\d[\d,]*(?:\.\d+)?)%?")
"""A number as written: optional sign, optional $, digits with thousands commas, decimals, %."""


def price(value: float) -> str:
    """$48,385.97 from one dollar up; 4 significant digits below ($0.0123, $0.5)."""
    if abs(value) >= 1:
        return f"${value:,.2f}"
    digits = f"{value:.4g}"
    return f"${digits}" if "e" not in digits else f"${float(digits):.12f}".rstrip("0")


def rounded(value: float, digits: int = 1) -> float:
    """The value as written with `digits` decimals (-0.0 becomes 0.0)."""
    return round(value, digits) + 0.0


def percent(value: float) -> str:
    """+3.2%, -0.4%, 0.0%: one decimal, explicit sign."""
    return f"{rounded(value):+.1f}%" if rounded(value) else "0.0%"


def magnitude(value: float) -> str:
    """3.2%: a percent change without its sign, for "up 3.2%" / "down 3.2%"."""
    return f"{abs(rounded(value)):.1f}%"


def score(value: float) -> str:
    """+1.3: a sentiment or other signed score with one decimal."""
    return f"{rounded(value):+.1f}" if rounded(value) else "0.0"


def level(value: float) -> str:
    """72.4: an unsigned reading such as RSI, one decimal."""
    return f"{rounded(value):.1f}"


def count(n: int, noun: str, plural: str | None = None) -> str:
    """'1 brief', '3 briefs', '54 days'."""
    return f"{n:,} {noun if n == 1 else plural or noun + 's'}"


def day(iso: str) -> str:
    """10 January 2025."""
    d = date.fromisoformat(iso)
    return f"{d.day} {d:%B} {d.year}"


def sign(value: float | None) -> int:
    """-1, 0 or 1 of the value as written (one decimal); 0 for None."""
    if value is None:
        return 0
    return (rounded(value) > 0) - (rounded(value) < 0)


def cited(text: str, verbatim: Iterable[str] = ()) -> list[str]:
    """Every number the text cites, normalised ('+3.2%' -> '+3.2', '$48,385.97' -> '48385.97').

    Strings in `verbatim` (titles, names, symbols, the written date) are removed first: a number
    inside a quoted headline is the headline's, not a claim of the text.
    """
    for quoted in sorted(verbatim, key=len, reverse=True):
        if quoted:
            text = text.replace(quoted, " ")
    return [_normal(m.group(1), m.group(2)) for m in _NUMBER.finditer(text)]


def _normal(signum: str, digits: str) -> str:
    body = digits.replace(",", "")
    if "." in body:
        body = body.rstrip("0").rstrip(".")
    body = body.lstrip("0") or "0"
    if body.startswith("."):
        body = "0" + body
    return ("-" if signum in "-−" else "+") + body if signum else body


def _forms(written: str) -> set[str]:
    """A formatted fact as the check accepts it: signed as written, and without its sign."""
    (number,) = cited(written)
    return {number, number.lstrip("+-")}


def allowed(facts: Facts) -> set[str]:
    """The normalised numbers an instrument analysis may cite."""
    texts = [price(facts.close), *(str(w) for w in WINDOWS)]
    texts += [
        percent(c) for c in (facts.change_1d, facts.change_7d, facts.change_30d) if c is not None
    ]
    texts += [level(facts.rsi)] if facts.rsi is not None else []
    texts += [price(s) for s in (facts.sma_50, facts.sma_200) if s is not None]
    texts += [str(facts.trend_days)] if facts.trend_days is not None else []
    texts += [str(facts.briefs_today), str(facts.briefs_7d)]
    texts += [score(s) for s in (facts.sentiment_today, facts.sentiment_7d) if s is not None]
    return set().union(*(_forms(t) for t in texts))


def allowed_market(facts: MarketFacts) -> set[str]:
    """The normalised numbers a market summary may cite."""
    counts = (facts.instruments, facts.advancers, facts.decliners, facts.unchanged)
    texts = [str(n) for n in (*counts, facts.briefs, facts.bullish, facts.bearish)]
    texts += [percent(m.change_1d) for m in (*facts.leaders, *facts.laggards)]
    texts += [score(facts.sentiment)] if facts.sentiment is not None else []
    return set().union(*(_forms(t) for t in texts))


def verbatim(facts: Facts) -> list[str]:
    """Strings an analysis may quote whole: titles, the name, the symbol and the day."""
    return [*facts.stories, facts.name, facts.symbol, day(facts.date), facts.date]


def verbatim_market(facts: MarketFacts) -> list[str]:
    symbols = [m.symbol for m in (*facts.leaders, *facts.laggards)]
    return [*facts.stories, *symbols, day(facts.date), facts.date]


def unsupported(text: str, facts: Facts) -> list[str]:
    """Numbers the analysis cites that are not among its facts (empty when the text is sound)."""
    ok = allowed(facts)
    return [n for n in cited(text, verbatim(facts)) if n not in ok]


def unsupported_market(text: str, facts: MarketFacts) -> list[str]:
    """Numbers the summary cites that are not among its facts."""
    ok = allowed_market(facts)
    return [n for n in cited(text, verbatim_market(facts)) if n not in ok]
