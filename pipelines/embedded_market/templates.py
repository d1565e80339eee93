"""Template banks of the embedded newsroom: headlines and body sentences by tone and market."""

from __future__ import annotations

TITLES: dict[str, tuple[str, ...]] = {
    "bullish": (
        "{name} jumps {pct} as buyers return",
        "{ticker} rallies {pct}; traders eye further gains",
        "{alias} climbs {pct} in a risk-on session",
        "Bulls take charge: {ticker} up {pct}",
        "{name} extends gains, closes at {price}",
        "{ticker} breaks higher as momentum builds",
        "Strong demand lifts {alias} {pct}",
        "{name} outperforms while {other} lags",
        "{ticker} gains {pct}, best day in weeks",
        "Upbeat mood sends {name} higher",
    ),
    "bearish": (
        "{name} slides {pct} as sellers step in",
        "{ticker} drops {pct}; support levels tested",
        "{alias} falls {pct} amid a risk-off mood",
        "{name} under pressure, ends at {price}",
        "Bears push {ticker} lower by {pct}",
        "{ticker} tumbles as volatility returns",
        "Selling hits {alias}, down {pct}",
        "{name} lags while {other} holds up",
        "{ticker} loses {pct} in a choppy session",
        "Weak demand weighs on {name}",
    ),
    "neutral": (
        "{name} little changed at {price}",
        "{ticker} trades in a tight range",
        "{alias} flat as traders await fresh cues",
        "{name} steadies after a mixed session",
        "What's next for {ticker}? Analysts weigh in",
        "{name} holds near {price} ahead of key data",
        "{ticker} and {other}: a quiet day for both",
        "Range-bound {alias} keeps traders guessing",
    ),
    "fomo": (
        "FOMO grips {ticker} traders as {name} soars {pct}",
        "Don't miss the move? {name} rips {pct} as retail piles in",
        "{ticker} to the moon? Euphoria builds after a {pct} surge",
        "Everyone is buying {alias}: fear of missing out lifts {ticker} {pct}",
        "Parabolic? {name} squeeze sends {ticker} up {pct}",
    ),
    "fud": (
        "Panic selling: {name} plunges {pct} as FUD spreads",
        "Is {ticker} finished? Fear grips {alias} after a {pct} drop",
        "Rumours of trouble hit {name}; {ticker} sinks {pct}",
        "Capitulation? {ticker} holders dump {alias} as fear spreads",
        "Crash fears mount as {name} sheds {pct}",
    ),
    "speculation": (
        "Could {ticker} double from here? Speculators bet on {name}",
        "Rumour mill: traders speculate on a big move in {name}",
        "Big money positioning in {ticker}? Analysts speculate",
        "{name} ({ticker}) could be set for a breakout, some traders speculate",
        "Is a {alias} breakout coming? Speculation builds",
    ),
}

OPENERS: dict[str, tuple[str, ...]] = {
    "up": (
        "{name} ({ticker}) rose {pct} to {price} on {date}, {reason}.",
        "{name} ({ticker}) gained {pct} on {date} and closed at {price}, {reason}.",
        "Buyers lifted {name} ({ticker}) by {pct} to {price} on {date}, {reason}.",
    ),
    "down": (
        "{name} ({ticker}) fell {pct} to {price} on {date}, {reason}.",
        "{name} ({ticker}) lost {pct} on {date} and closed at {price}, {reason}.",
        "Sellers pushed {name} ({ticker}) down {pct} to {price} on {date}, {reason}.",
    ),
    "closed": (
        "{name} ({ticker}) last closed at {price}; with markets shut on {date}, traders weigh {reason}.",
        "Markets are closed on {date}: {name} ({ticker}) stays at {price} while traders weigh {reason}.",
    ),
}

REASONS: dict[str, dict[str, tuple[str, ...]]] = {
    "crypto": {
        "up": (
            "as on-chain activity picked up",
            "helped by strong inflows into spot funds",
            "as funding rates turned positive",
            "after large wallets moved coins off exchanges",
            "as short sellers were squeezed",
        ),
        "down": (
            "as liquidations swept leveraged longs",
            "amid regulatory worries",
            "after a large holder moved coins to an exchange",
            "as risk appetite faded",
            "after an exchange outage rattled traders",
        ),
        "flat": ("network upgrade plans", "the regulatory outlook", "stablecoin flows"),
    },
    "forex": {
        "up": (
            "after hawkish central bank comments",
            "as yield spreads widened in its favour",
            "following stronger inflation data",
            "as risk sentiment improved",
        ),
        "down": (
            "after dovish central bank comments",
            "as yield spreads narrowed",
            "following weak growth data",
            "as safe-haven flows shifted",
        ),
        "flat": ("the next rate decision", "jobs data due next week", "central bank speeches"),
    },
    "commodities": {
        "up": (
            "on supply concerns",
            "after a surprise draw in inventories",
            "on a stronger demand outlook",
            "as the dollar weakened",
        ),
        "down": (
            "on rising supply",
            "after a surprise build in inventories",
            "on a weaker demand outlook",
            "as the dollar strengthened",
        ),
        "flat": ("inventory data", "the weather outlook", "producer output plans"),
    },
    "stocks": {
        "up": (
            "after results beat expectations",
            "following an analyst upgrade",
            "as the broader market advanced",
            "after raising its guidance",
        ),
        "down": (
            "after results missed expectations",
            "following an analyst downgrade",
            "as the broader market retreated",
            "after cutting its guidance",
        ),
        "flat": ("the coming earnings season", "the rate outlook", "sector rotation"),
    },
}

HYPE: dict[str, tuple[str, ...]] = {
    "fomo": (
        "Social media chatter exploded and retail traders rushed in, afraid to miss the rally.",
        "Traders piled into {ticker} on fear of missing out; some call it the start of a mania.",
    ),
    "fud": (
        "Fear, uncertainty and doubt spread across forums as holders worried about deeper losses.",
        "Unconfirmed rumours fuelled the selling; panic, not news, seemed to drive {ticker}.",
    ),
    "speculation": (
        "Speculation is rife, but nothing has been confirmed.",
        "Some traders speculate that {name} is being accumulated quietly; others urge caution.",
    ),
}

OTHERS: tuple[str, ...] = (
    "{other} ({other_ticker}) moved {other_pct} over the same day.",
    "Elsewhere, {other} ({other_ticker}) changed {other_pct}.",
    "By comparison, {other_ticker} moved {other_pct}.",
)
