"""The optional LLM enricher: an OpenAI-compatible chat-completions call, validated, with fallback."""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from typing import Annotated

import msgspec

from pipelines.newsroom.chat import ChatClient, ChatError
from pipelines.newsroom.config import LlmSettings
from pipelines.newsroom.enrichment import (
    MAX_SCORE,
    Article,
    Bias,
    Clout,
    Enrichment,
    LexiconEnricher,
    Tone,
)

log = logging.getLogger(__name__)

BODY_CHARS = 4_000
"""Body characters sent per article: enough for a news story, bounded for the context window."""

Sentiment = Annotated[float, msgspec.Meta(ge=-5.0, le=5.0)]
Score = Annotated[int, msgspec.Meta(ge=0, le=MAX_SCORE)]


class LlmAnswer(msgspec.Struct, forbid_unknown_fields=True):
    """The JSON object the model must answer: every key present, each value in range or null."""

    sentiment: Sentiment | None
    tone: Tone | None
    fud_fomo_bias: Bias | None
    fud_fomo_score: Score | None
    clout: Clout | None
    speculation_score: Score | None


SYSTEM_PROMPT = f"""You rate one financial news article for traders. Answer with ONE JSON object and
nothing else, with exactly these keys:
"sentiment": number from -5 (most bearish) to 5 (most bullish) for the instruments named, 0 neutral;
"tone": "bullish" (sentiment >= 1), "bearish" (sentiment <= -1) or "neutral";
"fud_fomo_bias": "fud" (plays on fear, uncertainty, doubt), "fomo" (plays on fear of missing out) or "neutral";
"fud_fomo_score": integer 0..{MAX_SCORE}, strength of that bias (0 when neutral);
"clout": "high" (market-moving: flagship instruments or the whole market), "medium" or "low";
"speculation_score": integer 0..{MAX_SCORE}, how much is rumour, hedging or prediction rather than fact.
Use null for a value you cannot judge."""

_ANSWER = msgspec.json.Decoder(LlmAnswer)


class LlmError(Exception):
    """The endpoint failed or its answer did not validate; the article falls back."""


class LlmEnricher:
    """Asks the model per article; any failure gives that article the fallback's enrichment."""

    name = "llm"

    def __init__(self, settings: LlmSettings, fallback: LexiconEnricher) -> None:
        self.settings = settings
        self.fallback = fallback

    def enrich(self, articles: Sequence[Article]) -> list[Enrichment]:
        out: list[Enrichment] = []
        failures = 0
        with ChatClient(self.settings) as chat:
            for article in articles:
                if failures >= self.settings.max_consecutive_failures:
                    out.append(self.fallback.enrich_one(article))
                    continue
                try:
                    out.append(self.ask(chat, article))
                    failures = 0
                except LlmError as exc:
                    failures += 1
                    log.warning("LLM enrichment failed, lexicon used instead: %s", exc)
                    out.append(self.fallback.enrich_one(article))
        return out

    def ask(self, chat: ChatClient, article: Article) -> Enrichment:
        user = {
            "market": article.market,
            "title": article.title,
            "body": article.body[:BODY_CHARS],
            "instruments_named": list(article.symbols),
        }
        try:
            text = chat.complete(SYSTEM_PROMPT, json.dumps(user, ensure_ascii=False), True)
        except ChatError as exc:
            raise LlmError(str(exc)) from exc
        try:
            answer = _ANSWER.decode(text)
        except msgspec.MsgspecError as exc:
            raise LlmError(f"{type(exc).__name__}: {exc}") from exc
        return to_enrichment(answer)


def to_enrichment(answer: LlmAnswer) -> Enrichment:
    def text(score: int | None) -> str | None:
        return None if score is None else str(score)

    return Enrichment(
        sentiment=None if answer.sentiment is None else round(answer.sentiment, 2),
        tone=answer.tone,
        fud_fomo_bias=answer.fud_fomo_bias,
        fud_fomo_score=text(answer.fud_fomo_score),
        clout=answer.clout,
        speculation_score=text(answer.speculation_score),
        enricher="llm",
    )
