"""The optional LLM enricher: an OpenAI-compatible chat-completions call, validated, with fallback."""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Sequence
from typing import Annotated

import httpx
import msgspec

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


class _Message(msgspec.Struct):
    content: str | None = None


class _Choice(msgspec.Struct):
    message: _Message


class ChatCompletion(msgspec.Struct):
    """The part of an OpenAI chat-completions response the enricher reads."""

    choices: Annotated[list[_Choice], msgspec.Meta(min_length=1)]


SYSTEM_PROMPT = f"""You rate one financial news article for traders. Answer with ONE JSON object and
nothing else, with exactly these keys:
"sentiment": number from -5 (most bearish) to 5 (most bullish) for the instruments named, 0 neutral;
"tone": "bullish" (sentiment >= 1), "bearish" (sentiment <= -1) or "neutral";
"fud_fomo_bias": "fud" (plays on fear, uncertainty, doubt), "fomo" (plays on fear of missing out) or "neutral";
"fud_fomo_score": integer 0..{MAX_SCORE}, strength of that bias (0 when neutral);
"clout": "high" (market-moving: flagship instruments or the whole market), "medium" or "low";
"speculation_score": integer 0..{MAX_SCORE}, how much is rumour, hedging or prediction rather than fact.
Use null for a value you cannot judge."""

_FENCE = re.compile(r"^\s*```(?:json)?\s*|\s*```\s*$")
_RESPONSE = msgspec.json.Decoder(ChatCompletion)
_ANSWER = msgspec.json.Decoder(LlmAnswer)


class LlmError(Exception):
    """The endpoint failed or its answer did not validate; the article falls back."""


class LlmEnricher:
    """Asks the model per article; any failure gives that article the fallback's enrichment."""

    name = "llm"

    def __init__(
        self,
        settings: LlmSettings,
        fallback: LexiconEnricher,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self.settings = settings
        self.fallback = fallback
        self._transport = transport

    def enrich(self, articles: Sequence[Article]) -> list[Enrichment]:
        out: list[Enrichment] = []
        failures = 0
        with self._client() as client:
            for article in articles:
                if failures >= self.settings.max_consecutive_failures:
                    out.append(self.fallback.enrich_one(article))
                    continue
                try:
                    out.append(self.ask(client, article))
                    failures = 0
                except LlmError as exc:
                    failures += 1
                    log.warning("LLM enrichment failed, lexicon used instead: %s", exc)
                    out.append(self.fallback.enrich_one(article))
        return out

    def ask(self, client: httpx.Client, article: Article) -> Enrichment:
        try:
            response = client.post("/chat/completions", json=self.request(article))
            response.raise_for_status()
            content = _RESPONSE.decode(response.content).choices[0].message.content
            answer = _ANSWER.decode(_FENCE.sub("", content or ""))
        except (httpx.HTTPError, msgspec.MsgspecError) as exc:
            raise LlmError(f"{type(exc).__name__}: {exc}") from exc
        return to_enrichment(answer)

    def request(self, article: Article) -> dict[str, object]:
        user = {
            "market": article.market,
            "title": article.title,
            "body": article.body[:BODY_CHARS],
            "instruments_named": list(article.symbols),
        }
        return {
            "model": self.settings.model,
            "temperature": 0,
            "response_format": {"type": "json_object"},
            "messages": [
                {"role": "system", "content": SYSTEM_PROMPT},
                {"role": "user", "content": json.dumps(user, ensure_ascii=False)},
            ],
        }

    def _client(self) -> httpx.Client:
        key = self.settings.api_key
        return httpx.Client(
            base_url=self.settings.base_url,
            timeout=self.settings.timeout_seconds,
            headers={"Authorization": f"Bearer {key}"} if key else {},
            transport=self._transport,
        )


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
