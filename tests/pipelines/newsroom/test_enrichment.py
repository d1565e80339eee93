"""The lexicon enricher: sentiment sign on the labelled headlines, FUD/FOMO bias, and every scale."""

from __future__ import annotations

import math

import pytest

from pipelines.newsroom.enrichment import Article, Enrichment, LexiconEnricher, clout_of, tone_of

from .labelled import LABELLED, Labelled

SIGN = {"bullish": 1, "fomo": 1, "bearish": -1, "fud": -1, "neutral": 0}


@pytest.fixture(scope="module")
def lexicon() -> LexiconEnricher:
    return LexiconEnricher()


def enrich(lexicon: LexiconEnricher, item: Labelled) -> Enrichment:
    return lexicon.enrich_one(Article(item.market, item.headline, item.headline))


def bucket_sign(sentiment: float | None) -> int:
    value = sentiment or 0.0
    return 1 if value >= 1 else -1 if value <= -1 else 0


def test_the_labelled_set_is_large_and_spans_every_label_and_market() -> None:
    assert len(LABELLED) >= 60
    assert {i.label for i in LABELLED} == set(SIGN)
    assert {i.market for i in LABELLED} == {"crypto", "forex", "commodities", "stocks"}


def test_sentiment_sign_matches_the_label_on_at_least_90_percent(lexicon: LexiconEnricher) -> None:
    # neutral must land in the neutral bucket (-1 < sentiment < 1), the others on their side
    misses = [i for i in LABELLED if bucket_sign(enrich(lexicon, i).sentiment) != SIGN[i.label]]
    assert 1 - len(misses) / len(LABELLED) >= 0.90, misses


def test_fud_and_fomo_headlines_get_their_bias_on_most(lexicon: LexiconEnricher) -> None:
    hyped = [i for i in LABELLED if i.label in ("fud", "fomo")]
    right = [i for i in hyped if enrich(lexicon, i).fud_fomo_bias == i.label]
    assert len(right) / len(hyped) >= 0.8


def test_plain_bullish_and_bearish_news_is_not_called_fud_or_fomo_on_most(
    lexicon: LexiconEnricher,
) -> None:
    plain = [i for i in LABELLED if i.label in ("bullish", "bearish", "neutral")]
    neutral = [i for i in plain if enrich(lexicon, i).fud_fomo_bias == "neutral"]
    assert len(neutral) / len(plain) >= 0.85


@pytest.mark.parametrize(
    ("text", "positive"),
    [
        ("Bitcoin surges to record high", True),
        ("Bitcoin does not surge", False),
        ("Apple beats analyst estimates", True),
        ("Apple misses revenue expectations", False),
        ("Gold up 2.5% on the day", True),
        ("Gold down 2.5% on the day", False),
    ],
)
def test_finance_phrases_and_negation_move_the_sign(
    lexicon: LexiconEnricher, text: str, positive: bool
) -> None:
    sentiment = lexicon.enrich_one(Article("stocks", text, text)).sentiment
    assert sentiment is not None
    assert (sentiment > 0) is positive


def test_vader_alone_is_blind_to_the_finance_phrase(lexicon: LexiconEnricher) -> None:
    # why the finance lexicon exists: plain VADER scores this 0
    assert lexicon.enrich_one(Article("crypto", "Bitcoin surges to record high", "")).sentiment
    assert lexicon.compound("Bitcoin surges to record high") > 0.5


def test_every_field_on_its_documented_scale(lexicon: LexiconEnricher) -> None:
    for item in LABELLED:
        result = enrich(lexicon, item)
        assert result.sentiment is not None
        assert math.isfinite(result.sentiment)
        assert -5 <= result.sentiment <= 5
        assert result.tone == tone_of(result.sentiment)
        assert result.fud_fomo_bias in {"fud", "fomo", "neutral"}
        assert int(result.fud_fomo_score or "x") in range(11)
        assert (result.fud_fomo_score == "0") is (result.fud_fomo_bias == "neutral")
        assert int(result.speculation_score or "x") in range(11)
        assert result.clout in {"high", "medium", "low"}


def test_speculative_language_scores_higher_than_a_plain_report(lexicon: LexiconEnricher) -> None:
    rumour = "Could Solana 10x? Traders speculate on rumoured ETF, sources say"
    fact = "Solana closed at 95 dollars on Tuesday"
    scores = [
        int(lexicon.enrich_one(Article("crypto", t, "")).speculation_score or 0)
        for t in (rumour, fact)
    ]
    assert scores[0] >= 6
    assert scores[1] == 0


def test_an_article_without_text_has_no_sentiment(lexicon: LexiconEnricher) -> None:
    result = lexicon.enrich_one(Article("crypto", None, "  "))
    assert (result.sentiment, result.tone) == (None, None)


@pytest.mark.parametrize(
    ("market", "symbols", "clout"),
    [
        ("crypto", ("BTC",), "high"),
        ("crypto", ("SOL",), "medium"),
        ("crypto", ("SOL", "ADA", "DOT"), "high"),
        ("stocks", (), "low"),
        ("forex", ("EURUSD",), "high"),
        ("commodities", ("CORN",), "medium"),
    ],
)
def test_clout_from_flagships_and_breadth(
    market: str, symbols: tuple[str, ...], clout: str
) -> None:
    assert clout_of(market, symbols) == clout


@pytest.mark.parametrize(
    ("sentiment", "tone"),
    [(1.0, "bullish"), (0.99, "neutral"), (-1.0, "bearish"), (-0.99, "neutral"), (None, None)],
)
def test_tone_follows_the_sentiment_buckets(sentiment: float | None, tone: str | None) -> None:
    assert tone_of(sentiment) == tone
