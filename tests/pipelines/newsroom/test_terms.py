"""A trie-shaped pattern matches exactly what the plain alternation of its terms matches."""

from __future__ import annotations

import re

from hypothesis import given
from hypothesis import strategies as st

from pipelines.newsroom import lexicon
from pipelines.newsroom.terms import term_pattern, trie_alternation, word_tail


def plain_pattern(terms: list[str]) -> re.Pattern[str]:
    """The alternation the trie replaces: each term bounded, longest first."""

    def bounded(term: str) -> str:
        head = r"(?<!\w)" if term[0].isalnum() else ""
        return head + re.escape(term) + word_tail(term[-1])

    ordered = sorted(terms, key=len, reverse=True)
    return re.compile("|".join(bounded(t) for t in ordered), re.IGNORECASE)


TERMS = st.lists(st.text("abAB? -'", min_size=1, max_size=5), min_size=1, max_size=12)


@given(terms=TERMS, text=st.text("abAB? -'x.", max_size=40))
def test_the_trie_finds_what_the_alternation_finds(terms: list[str], text: str) -> None:
    assert term_pattern(terms).findall(text) == plain_pattern(terms).findall(text)


def test_the_lexicon_patterns_agree_on_a_headline() -> None:
    text = (
        "FOMO? Bitcoin could go to the moon, fear of missing out... or panic selling: is it over?"
    )
    for terms in (lexicon.FOMO_TERMS, lexicon.FUD_TERMS, lexicon.SPECULATION_TERMS):
        assert term_pattern(terms).findall(text) == plain_pattern(list(terms)).findall(text)


def test_a_trie_prefers_the_longest_term_and_backtracks_to_a_shorter_one() -> None:
    source = trie_alternation(["rug", "rug pull", "rugged"])
    pattern = re.compile(rf"(?:{source})(?!\w)", re.IGNORECASE)
    assert pattern.findall("Rug pull, rugged, rug-pulled") == ["Rug pull", "rugged", "rug"]
    assert trie_alternation([]) == ""
