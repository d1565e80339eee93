"""The default writer: deterministic, offline templates whose wording follows the facts it cites."""

from __future__ import annotations

import hashlib
import random
from collections.abc import Sequence

from pipelines.newsroom.writing import numbers as fmt
from pipelines.newsroom.writing.facts import Facts, MarketFacts, Mover

OVERBOUGHT = 70.0
OVERSOLD = 30.0
"""RSI(14) at or above 70 is overbought, at or below 30 oversold (Wilder's thresholds)."""
BULLISH = 1.0
"""A mean sentiment >= 1 leans bullish, <= -1 bearish (the brief buckets of decisions.md)."""

ACTIONS = {
    "Buy": ("bought on the latest bar", "bought on the latest bar"),
    "Sell": ("sold on the latest bar", "sold on the latest bar"),
    "Hold": ("is holding a position", "are holding a position"),
    "Stay": ("is out of the market", "are out of the market"),
}
"""Each action in words: (one strategy, both strategies)."""


def rng(*parts: str) -> random.Random:
    """A generator seeded by a stable hash of the parts: same (symbol, day), same wording."""
    digest = hashlib.sha256("|".join(parts).encode()).digest()
    return random.Random(int.from_bytes(digest[:8], "big"))


def move(change: float) -> str:
    """'up 3.2%', 'down 0.4%' or 'unchanged', by the change as written (one decimal)."""
    direction = fmt.sign(change)
    if direction == 0:
        return "unchanged"
    return ("up " if direction > 0 else "down ") + fmt.magnitude(change)


def tone(sentiment: float) -> str:
    rounded = fmt.rounded(sentiment)
    if rounded >= BULLISH:
        return "leaning bullish"
    return "leaning bearish" if rounded <= -BULLISH else "broadly neutral"


def rsi_label(rsi: float) -> str:
    rounded = fmt.rounded(rsi)
    if rounded >= OVERBOUGHT:
        return "overbought"
    return "oversold" if rounded <= OVERSOLD else "neutral"


def listing(items: Sequence[str]) -> str:
    """'a', 'a and b', 'a, b and c'."""
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def quoted(titles: Sequence[str]) -> str:
    return "; ".join(f'"{t}"' for t in titles)


def analysis(facts: Facts) -> str:
    """One or two paragraphs about one instrument on one day, wording chosen by (symbol, date)."""
    r = rng(facts.symbol, facts.date)
    first = [opener(facts, r), horizon(facts, r), momentum(facts, r), averages(facts, r)]
    second = [trend(facts, r), strategies(facts, r), news(facts, r), stories(facts, r)]
    paragraphs = [" ".join(s for s in part if s) for part in (first, second)]
    return "\n\n".join(p for p in paragraphs if p)


def opener(f: Facts, r: random.Random) -> str:
    when, close = fmt.day(f.date), fmt.price(f.close)
    if f.change_1d is None:
        return f"{f.name} ({f.symbol}) closed {when} at {close}."
    m = move(f.change_1d)
    return r.choice(
        [
            f"{f.name} ({f.symbol}) closed {when} at {close}, {m} on the day.",
            f"On {when}, {f.symbol} settled at {close}, {m} from the previous close.",
            f"{f.name} finished {when} at {close}, {m} over the session.",
            f"{f.symbol} ended {when} {m} at {close}.",
        ]
    )


def horizon(f: Facts, r: random.Random) -> str:
    if f.change_7d is None:
        return ""
    w = move(f.change_7d)
    if f.change_30d is None:
        return f"Over 7 days it is {w}."
    m = move(f.change_30d)
    return r.choice(
        [
            f"Over 7 days it is {w}, and over 30 days {m}.",
            f"The 7-day change stands at {fmt.percent(f.change_7d)} and the 30-day change at "
            f"{fmt.percent(f.change_30d)}.",
            f"Across the past 7 days the coin is {w}; across 30 days, {m}.",
        ]
    )


def momentum(f: Facts, r: random.Random) -> str:
    parts = []
    if f.rsi is not None:
        rsi, label = fmt.level(f.rsi), rsi_label(f.rsi)
        zone = "neutral ground" if label == "neutral" else f"{label} territory"
        parts.append(
            r.choice([f"RSI(14) reads {rsi}, in {zone}", f"the 14-day RSI is {rsi} ({label})"])
        )
    if f.macd_histogram is not None:
        side = {1: "positive", -1: "negative", 0: "flat"}[_raw_sign(f.macd_histogram)]
        parts.append(f"the MACD histogram is {side}")
    if not parts:
        return ""
    text = " and ".join(parts)
    return text[0].upper() + text[1:] + "."


def _raw_sign(value: float) -> int:
    return (value > 0) - (value < 0)


def averages(f: Facts, r: random.Random) -> str:
    sides = [
        (n, _side(f.close, sma), sma)
        for n, sma in ((50, f.sma_50), (200, f.sma_200))
        if sma is not None
    ]
    if not sides:
        return ""
    if len(sides) == 2 and sides[0][1] == sides[1][1] and r.random() < 0.5:
        return f"Price trades {sides[0][1]} both its 50-day and 200-day averages."
    cite = r.random() < 0.5
    said = [
        f"{side} its {n}-day average" + (f" of {fmt.price(v)}" if cite else "")
        for n, side, v in sides
    ]
    return "Price is " + " and ".join(said) + "."


def _side(close: float, average: float) -> str:
    return "above" if close > average else "below" if close < average else "at"


def trend(f: Facts, r: random.Random) -> str:
    if f.trend is None or f.trend_days is None:
        return ""
    days = fmt.count(f.trend_days, "day")
    if f.trend == "neutral":
        return r.choice(
            [
                f"No confirmed trend has held for the past {days}.",
                f"{f.symbol} has moved sideways, without a confirmed trend, for {days}.",
            ]
        )
    kind = f"{f.trend}trend"
    strength = f"{f.trend_strength} " if f.trend_strength else ""
    return r.choice(
        [
            f"The running {kind} has lasted {days}"
            + (f" and is rated {f.trend_strength}." if strength else "."),
            f"{f.symbol} has been in a {strength}{kind} for {days}.",
            f"A {strength}{kind} has been in place for {days}.",
        ]
    )


def strategies(f: Facts, r: random.Random) -> str:
    a, c = f.aggressive_action, f.conservative_action
    if a in ACTIONS and a == c:
        both = ACTIONS[a][1]
        return r.choice(
            [
                f"Both simulated strategies {both}.",
                f"The aggressive and conservative strategies agree: both {both}.",
            ]
        )
    if a in ACTIONS and c in ACTIONS:
        pa, pc = ACTIONS[a][0], ACTIONS[c][0]
        return r.choice(
            [
                f"The aggressive strategy {pa}, while the conservative one {pc}.",
                f"Of the simulated strategies, the aggressive one {pa} and the conservative one {pc}.",
            ]
        )
    for name, action in (("aggressive", a), ("conservative", c)):
        if action in ACTIONS:
            return f"The {name} strategy {ACTIONS[action][0]}."
    return ""


def news(f: Facts, r: random.Random) -> str:
    if f.briefs_7d == 0:
        return f"No news brief named {f.symbol} in the past 7 days."
    week = fmt.count(f.briefs_7d, "brief")
    today = "none of them today" if f.briefs_today == 0 else f"{f.briefs_today} of them today"
    if f.sentiment_7d is None:
        return f"{f.symbol} appeared in {week} over the past 7 days, {today}."
    mood = f"{fmt.score(f.sentiment_7d)}, {tone(f.sentiment_7d)}"
    text = r.choice(
        [
            f"News flow counted {week} over 7 days ({today}), with an average sentiment of {mood}.",
            f"{f.symbol} appeared in {week} in the past 7 days, {today}; their average sentiment "
            f"is {mood}.",
        ]
    )
    if f.briefs_today and f.sentiment_today is not None:
        text += f" Today's briefs average {fmt.score(f.sentiment_today)}."
    return text


def stories(f: Facts, r: random.Random) -> str:
    if not f.stories:
        return ""
    lead = r.choice(["Top stories:", "Headlines to note:", "In the news:"])
    return f"{lead} {quoted(f.stories)}."


def summary(facts: MarketFacts) -> str:
    """One or two paragraphs about the market on one day, wording chosen by (market, date)."""
    r = rng(facts.market, facts.date)
    first = [breadth(facts, r), movers(facts.leaders, facts.laggards, r)]
    second = [market_news(facts, r), stories_of_day(facts, r)]
    paragraphs = [" ".join(s for s in part if s) for part in (first, second)]
    return "\n\n".join(p for p in paragraphs if p)


def breadth(f: MarketFacts, r: random.Random) -> str:
    when = fmt.day(f.date)
    if f.instruments == 0:
        return f"On {when} too few prices were available to measure the market's breadth."
    label = (
        "positive"
        if f.advancers > f.decliners
        else "negative"
        if f.decliners > f.advancers
        else "balanced"
    )
    flat = f", {f.unchanged} unchanged" if f.unchanged else ""
    return r.choice(
        [
            f"On {when}, {f.advancers} of {f.instruments} crypto instruments rose and "
            f"{f.decliners} fell{flat}: breadth was {label}.",
            f"Crypto breadth on {when} was {label}, with {f.advancers} advancers against "
            f"{f.decliners} decliners among {f.instruments} coins{flat}.",
        ]
    )


def _movers(movers: Sequence[Mover]) -> str:
    return listing([f"{m.symbol} ({fmt.percent(m.change_1d)})" for m in movers])


def movers(leaders: Sequence[Mover], laggards: Sequence[Mover], r: random.Random) -> str:
    parts = []
    if leaders:
        lead = r.choice(
            [
                "Leaders:",
                "The biggest gainer was" if len(leaders) == 1 else "The biggest gainers were",
            ]
        )
        parts.append(f"{lead} {_movers(leaders)}.")
    if laggards:
        lag = r.choice(
            [
                "Laggards:",
                "The steepest faller was" if len(laggards) == 1 else "The steepest fallers were",
            ]
        )
        parts.append(f"{lag} {_movers(laggards)}.")
    return " ".join(parts)


def market_news(f: MarketFacts, r: random.Random) -> str:
    if f.briefs == 0:
        return "No crypto news brief was published that day."
    briefs = fmt.count(f.briefs, "brief")
    split = f"{f.bullish} bullish and {f.bearish} bearish"
    if f.sentiment is None:
        return f"The newsroom published {briefs}, {split}."
    mood = f"{fmt.score(f.sentiment)} ({tone(f.sentiment)})"
    return r.choice(
        [
            f"The newsroom published {briefs}, {split}, with an average sentiment of {mood}.",
            f"Across {briefs} the average sentiment was {mood}; {split}.",
        ]
    )


def stories_of_day(f: MarketFacts, r: random.Random) -> str:
    if not f.stories:
        return ""
    lead = r.choice(["Notable stories:", "Stories that stood out:"])
    return f"{lead} {quoted(f.stories)}."
