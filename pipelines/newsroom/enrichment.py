"""Per-article enrichment: the `Enricher` interface and the offline finance-lexicon enricher."""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, Protocol

import msgspec
from vaderSentiment.vaderSentiment import SentimentIntensityAnalyzer

from pipelines.newsroom import lexicon
from pipelines.newsroom.finance_grammar import read_finance
from pipelines.newsroom.finance_scope import scoped_valences
from pipelines.newsroom.terms import term_pattern
from pipelines.platform.parallel import map_chunks

Tone = Literal["bullish", "bearish", "neutral"]
Bias = Literal["fud", "fomo", "neutral"]
Clout = Literal["high", "medium", "low"]

SENTIMENT_SCALE = 5.0
"""VADER's compound score (-1..1) times this is the brief's sentiment (-5..+5)."""
TONE_THRESHOLD = 1.0
"""|sentiment| from which a brief is bullish or bearish: the sentiment buckets of decisions.md."""
TITLE_WEIGHT = 0.6
"""Share of the headline in the sentiment when the article also has a distinct body."""
MAX_SCORE = 10
GENERAL_WORD_WEIGHT = 0.15
"""Weight of VADER's own valences, which rate everyday speech, against the finance lexicon's."""

FLAGSHIPS: dict[str, frozenset[str]] = {
    "crypto": frozenset({"BTC", "ETH"}),
    "forex": frozenset({"EURUSD", "USDJPY", "GBPUSD"}),
    "commodities": frozenset({"GOLD", "WTI", "BRENT"}),
    "stocks": frozenset({"AAPL", "MSFT", "NVDA", "AMZN", "GOOGL", "META", "TSLA"}),
}
"""The instruments that move their whole market: a brief naming one has high clout."""


@dataclass(frozen=True)
class Article:
    """What an enricher reads: the market, the text and the instruments it names."""

    market: str
    title: str | None
    body: str
    symbols: tuple[str, ...] = ()


class Enrichment(msgspec.Struct, frozen=True):
    """The enrichment fields of a brief (null where the enricher could not fill one)."""

    sentiment: float | None
    tone: Tone | None
    fud_fomo_bias: Bias | None
    fud_fomo_score: str | None
    clout: Clout | None
    speculation_score: str | None
    enricher: str = "lexicon"


class Enricher(Protocol):
    """Enriches a batch of articles, one `Enrichment` per article in the same order."""

    def enrich(self, articles: Sequence[Article]) -> list[Enrichment]: ...


def tone_of(sentiment: float | None) -> Tone | None:
    if sentiment is None:
        return None
    if sentiment >= TONE_THRESHOLD:
        return "bullish"
    return "bearish" if sentiment <= -TONE_THRESHOLD else "neutral"


def clout_of(market: str, symbols: Sequence[str]) -> Clout:
    """high: names a flagship of its market or three instruments or more; medium: names one."""
    if len(symbols) >= 3 or FLAGSHIPS.get(market, frozenset()).intersection(symbols):
        return "high"
    return "medium" if symbols else "low"


_FOMO = term_pattern(lexicon.FOMO_TERMS)
_FUD = term_pattern(lexicon.FUD_TERMS)
_SPECULATION = term_pattern(lexicon.SPECULATION_TERMS)


def weighted_hits(pattern: re.Pattern[str], title: str, body: str) -> int:
    """Matches of `pattern`, a headline's counting twice (it is what readers react to)."""
    return 2 * len(pattern.findall(title)) + len(pattern.findall(body))


class LexiconEnricher:
    """VADER with a finance lexicon for sentiment, and word rules for FUD/FOMO and speculation.

    Offline and deterministic: no model, no network.
    """

    name = "lexicon"

    def __init__(self) -> None:
        self._vader = SentimentIntensityAnalyzer()
        self._vader.lexicon = finance_valences(self._vader.lexicon)

    def enrich(self, articles: Sequence[Article]) -> list[Enrichment]:
        # VADER is pure Python: a first load's tens of thousands of articles go to worker processes.
        return map_chunks(self.enrich_each, articles)

    def enrich_each(self, articles: Sequence[Article]) -> list[Enrichment]:
        return [self.enrich_one(a) for a in articles]

    def enrich_one(self, article: Article) -> Enrichment:
        title, body = article.title or "", _distinct_body(article)
        sentiment = self.sentiment(title, body)
        bias, strength = fud_fomo(title, body, sentiment)
        return Enrichment(
            sentiment=sentiment,
            tone=tone_of(sentiment),
            fud_fomo_bias=bias,
            fud_fomo_score=str(strength),
            clout=clout_of(article.market, article.symbols),
            speculation_score=str(min(MAX_SCORE, weighted_hits(_SPECULATION, title, body))),
        )

    def sentiment(self, title: str, body: str) -> float | None:
        """-5..+5: the headline's compound score blended with the body's, times 5."""
        parts = [(TITLE_WEIGHT, title), (1 - TITLE_WEIGHT, body)]
        scored = [(w, self.compound(text)) for w, text in parts if text.strip()]
        if not scored:
            return None
        total = sum(w for w, _ in scored)
        value = sum(w * c for w, c in scored) / total * SENTIMENT_SCALE
        return round(value, 2) if math.isfinite(value) else None

    def compound(self, text: str) -> float:
        return float(self._vader.polarity_scores(read_finance(text))["compound"])


def finance_valences(general: dict[str, float]) -> dict[str, float]:
    """VADER's lexicon for finance news: general-language words damped, the finance lexicon's as is,
    each with its negated and hedged forms (`finance_scope`).

    Press releases and wire copy are full of words that VADER rates for everyday speech (award,
    best, partner, support, growth): in financial news they are mostly neutral description.
    """
    damped = {word: valence * GENERAL_WORD_WEIGHT for word, valence in general.items()}
    return scoped_valences(damped | lexicon.FINANCE_WORDS)


def fud_fomo(title: str, body: str, sentiment: float | None) -> tuple[Bias, int]:
    """The crowd emotion the article plays on, and its strength 0..10 (0 when neutral).

    A side wins on more weighted hits, and needs two (a headline hit) or a sentiment of its sign.
    """
    fomo = weighted_hits(_FOMO, title, body)
    # "fear of missing out" is greed, not fear: FOMO phrases are removed before counting FUD
    fud = weighted_hits(_FUD, _FOMO.sub(" ", title), _FOMO.sub(" ", body))
    signed = sentiment or 0.0
    if fomo > fud and (fomo >= 2 or signed > 0):
        return "fomo", min(MAX_SCORE, fomo + round(abs(signed)))
    if fud > fomo and (fud >= 2 or signed < 0):
        return "fud", min(MAX_SCORE, fud + round(abs(signed)))
    return "neutral", 0


def _distinct_body(article: Article) -> str:
    """The body, or nothing when it only repeats the headline (an item with no body of its own)."""
    body = article.body.strip()
    return "" if body == (article.title or "").strip() else body
