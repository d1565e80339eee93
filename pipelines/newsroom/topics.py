"""A brief's topic: the theme its words are about (security, regulation, earnings, macro, ...)."""

from __future__ import annotations

from pipelines.newsroom import lexicon
from pipelines.newsroom.caseless import Caseless
from pipelines.newsroom.terms import term_pattern

DEFAULT_TOPIC = "price"
"""The topic of a brief whose words name no other theme: a market move."""

_PATTERNS: tuple[tuple[str, Caseless], ...] = tuple(
    (name, Caseless(term_pattern(words).pattern)) for name, words in lexicon.TOPICS
)


def topic_of(title: str | None, body: str | None) -> str:
    """The topic with the most keyword hits (the headline's count twice); ties go to the first."""
    scores = [
        (2 * len(p.findall(title or "")) + len(p.findall(body or "")), -rank, name)
        for rank, (name, p) in enumerate(_PATTERNS)
    ]
    best = max(scores)
    return best[2] if best[0] > 0 else DEFAULT_TOPIC
