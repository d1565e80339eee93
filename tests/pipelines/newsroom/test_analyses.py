"""Written analyses: the template writer's wording and numbers, the number check, determinism."""

from __future__ import annotations

import random
import re

import msgspec
import pytest

from pipelines.newsroom.writing import numbers as fmt
from pipelines.newsroom.writing import template
from pipelines.newsroom.writing.facts import Facts, MarketFacts, Mover
from pipelines.newsroom.writing.writer import TemplateWriter

BTC = Facts(
    symbol="BTC",
    name="Bitcoin",
    date="2025-01-10",
    close=48385.97,
    change_1d=3.21,
    change_7d=-5.04,
    change_30d=12.0,
    rsi=55.0,
    macd_histogram=12.2,
    sma_50=45000.1,
    sma_200=39000.5,
    trend="up",
    trend_strength="strong",
    trend_days=54,
    aggressive_action="Hold",
    conservative_action="Buy",
    briefs_today=2,
    briefs_7d=5,
    sentiment_today=1.26,
    sentiment_7d=0.44,
    stories=("Bitcoin jumps 6% to $100,000 as ETF inflows surge", "Exchange hacked"),
)
MARKET = MarketFacts(
    market="crypto",
    date="2025-01-10",
    instruments=4,
    advancers=2,
    decliners=1,
    unchanged=1,
    leaders=(Mover("BTC", 3.21), Mover("1INCH", 1.04)),
    laggards=(Mover("ETH", -2.5),),
    briefs=3,
    sentiment=0.5,
    bullish=1,
    bearish=1,
    stories=("A 5% move in 2 hours",),
)


def with_(facts: Facts, **changes: object) -> Facts:
    return msgspec.structs.replace(facts, **changes)


def opener(text: str) -> str:
    return text.split(". ")[0]


@pytest.mark.parametrize(
    ("value", "written"),
    [
        (48385.97, "$48,385.97"),
        (1.0, "$1.00"),
        (0.0123, "$0.0123"),
        (0.012345, "$0.01235"),
        (0.5, "$0.5"),
        (0.00001234, "$0.00001234"),
    ],
)
def test_prices_are_written_with_cents_and_sub_dollar_coins_with_four_significant_digits(
    value: float, written: str
) -> None:
    assert fmt.price(value) == written


@pytest.mark.parametrize(
    ("value", "percent", "magnitude", "score"),
    [
        (3.21, "+3.2%", "3.2%", "+3.2"),
        (-0.44, "-0.4%", "0.4%", "-0.4"),
        (0.04, "0.0%", "0.0%", "0.0"),
    ],
)
def test_percents_and_scores_carry_one_decimal_and_a_sign(
    value: float, percent: str, magnitude: str, score: str
) -> None:
    assert (fmt.percent(value), fmt.magnitude(value), fmt.score(value)) == (
        percent,
        magnitude,
        score,
    )


def test_an_up_day_is_written_up_and_a_down_day_down() -> None:
    up = opener(template.analysis(BTC))
    down = opener(template.analysis(with_(BTC, change_1d=-3.21)))
    assert "up 3.2%" in up
    assert "down" not in up
    assert "down 3.2%" in down
    assert "up " not in down


def test_a_change_that_rounds_to_zero_is_written_unchanged() -> None:
    text = opener(template.analysis(with_(BTC, change_1d=0.04)))
    assert "unchanged" in text
    assert "up " not in text
    assert "down" not in text


@pytest.mark.parametrize(
    ("rsi", "label"),
    [
        (70.0, "overbought"),
        (69.96, "overbought"),
        (69.9, "neutral"),
        (30.0, "oversold"),
        (30.1, "neutral"),
    ],
)
def test_rsi_is_overbought_from_70_and_oversold_to_30_as_written(rsi: float, label: str) -> None:
    text = template.analysis(with_(BTC, rsi=rsi))
    assert fmt.level(rsi) in text
    for word in ("overbought", "oversold"):
        assert (word in text) == (word == label)


def random_facts(seed: int) -> Facts:
    r = random.Random(seed)

    def maybe(value: float) -> float | None:
        return None if r.random() < 0.15 else value

    close = 10 ** r.uniform(-5, 5)
    return Facts(
        symbol=f"C{seed}",
        name=f"Coin {seed}",
        date=f"2025-01-{r.randint(1, 28):02d}",
        close=close,
        change_1d=maybe(r.uniform(-0.2, 0.2) if r.random() < 0.2 else r.uniform(-15, 15)),
        change_7d=maybe(r.uniform(-30, 30)),
        change_30d=maybe(r.uniform(-60, 60)),
        rsi=maybe(r.uniform(5, 95)),
        macd_histogram=maybe(r.uniform(-1, 1)),
        sma_50=maybe(close * r.uniform(0.8, 1.2)),
        sma_200=maybe(close * r.uniform(0.7, 1.3)),
        trend=r.choice([None, "up", "down", "neutral"]),
        trend_strength=r.choice(["weak", "moderate", "strong"]),
        trend_days=r.randint(1, 400),
        aggressive_action=r.choice([None, "Buy", "Sell", "Hold", "Stay"]),
        conservative_action=r.choice(["Buy", "Sell", "Hold", "Stay"]),
        briefs_today=r.randint(0, 3),
        briefs_7d=r.randint(3, 40),
        sentiment_today=maybe(r.uniform(-5, 5)),
        sentiment_7d=maybe(r.uniform(-5, 5)),
        stories=tuple(f"Story {n} about {r.randint(1, 99)}%" for n in range(r.randint(0, 3))),
    )


@pytest.mark.parametrize("seed", range(200))
def test_the_template_never_contradicts_the_facts_it_cites(seed: int) -> None:
    facts = random_facts(seed)
    text = template.analysis(facts)
    assert fmt.unsupported(text, facts) == []
    first = opener(text)
    direction = fmt.sign(facts.change_1d)
    assert ("up " in first) == (direction > 0)
    assert (" down " in first) == (direction < 0)
    rsi = fmt.rounded(facts.rsi) if facts.rsi is not None else 50.0
    assert ("overbought" in text) == (rsi >= template.OVERBOUGHT)
    assert ("oversold" in text) == (rsi <= template.OVERSOLD)
    if facts.sma_50 is not None and "above its 50-day" in text:
        assert facts.close > facts.sma_50
    if facts.sma_50 is not None and "below its 50-day" in text:
        assert facts.close < facts.sma_50
    if facts.trend in ("up", "down"):
        assert f"{facts.trend}trend" in text
        assert fmt.count(facts.trend_days or 0, "day") in text


def test_same_facts_give_the_same_text() -> None:
    assert template.analysis(BTC) == template.analysis(with_(BTC))
    assert template.summary(MARKET) == template.summary(MARKET)
    assert TemplateWriter().analyses([BTC]) == TemplateWriter().analyses([BTC])


def test_different_symbols_get_different_phrasings() -> None:
    skeletons = set()
    for n in range(12):
        facts = with_(BTC, symbol=f"S{n}X", name=f"Name{n}X")
        text = template.analysis(facts).replace(facts.symbol, "SYM").replace(facts.name, "NAME")
        skeletons.add(text)
    assert len(skeletons) >= 6


def test_the_number_check_accepts_the_template_and_flags_other_numbers() -> None:
    text = template.analysis(BTC)
    assert fmt.unsupported(text, BTC) == []
    assert fmt.unsupported(text.replace("$48,385.97", "$48,386"), BTC) == ["48386"]
    assert fmt.unsupported(text + " It may reach $60,000.", BTC) == ["60000"]
    assert fmt.unsupported("Bitcoin is +5.0% over 7 days.", BTC) == ["+5"]  # the fact is -5.0%
    assert fmt.unsupported("Over 7 days it is down 5.0%.", BTC) == []


def test_numbers_inside_quoted_headlines_are_the_headlines_not_claims() -> None:
    text = 'Top story: "Bitcoin jumps 6% to $100,000 as ETF inflows surge".'
    assert fmt.unsupported(text, BTC) == []
    assert fmt.unsupported("Bitcoin jumps 6% today.", BTC) == ["6"]


def test_the_market_summary_cites_breadth_movers_and_tone_from_its_facts() -> None:
    text = template.summary(MARKET)
    assert fmt.unsupported_market(text, MARKET) == []
    assert "2 of 4" in text or "2 advancers against 1 decliners" in text
    assert "1INCH (+1.0%)" in text
    assert "ETH (-2.5%)" in text
    assert "+0.5" in text
    assert fmt.unsupported_market(text.replace("+0.5", "+0.7"), MARKET) == ["+0.7"]


@pytest.mark.parametrize(
    ("advancers", "decliners", "label"),
    [(3, 1, "positive"), (1, 3, "negative"), (2, 2, "balanced")],
)
def test_breadth_is_positive_only_with_more_advancers_than_decliners(
    advancers: int, decliners: int, label: str
) -> None:
    facts = msgspec.structs.replace(
        MARKET,
        instruments=advancers + decliners,
        advancers=advancers,
        decliners=decliners,
        unchanged=0,
    )
    text = template.summary(facts)
    assert re.search(rf"breadth was {label}|was {label}, with", text, re.IGNORECASE)


def test_the_summary_names_no_leaders_on_a_day_without_risers() -> None:
    facts = msgspec.structs.replace(MARKET, advancers=0, leaders=())
    text = template.summary(facts)
    assert "Leaders" not in text
    assert "gainer" not in text
