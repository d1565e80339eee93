"""A Caseless pattern's cheap tests never hide a match: `sub`, `search` and `findall` equal `re`'s."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pipelines.newsroom import finance_grammar, lexicon, topics
from pipelines.newsroom.caseless import Caseless, necessary_literals, relaxed, substitute_each

GRAMMAR: list[Caseless] = [
    *(p for p, _ in lexicon.COMPILED_PHRASES),
    *(p for p, _ in finance_grammar._PLAIN_PHRASES),
    *(p for p, _ in finance_grammar._RATINGS),
    *(p for p, _ in finance_grammar._STANCES),
    *(p for _, p in topics._PATTERNS),
]
RULES: list[tuple[Caseless, str]] = [
    *lexicon.COMPILED_PHRASES,
    *finance_grammar._PLAIN_PHRASES,
    *finance_grammar._RATINGS,
    *finance_grammar._STANCES,
]
"""The grammar's rewrite rules (pattern, replacement word)."""
WORDS = sorted({w for p in GRAMMAR for w in re.findall(r"[a-z]+", p.pattern.pattern)})
"""Every word the grammar's patterns spell: random texts of them reach deep into the patterns."""


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        (r"\bnew highs?\b", "new highs?"),
        (r"[\b]x\\b", r"[\b]x\\b"),  # backspace in a class, an escaped backslash then "b"
        (r"[]\b]|[^]\b]\b", r"[]\b]|[^]\b]"),  # a "]" first in a class is a literal
        (r"(?P<Now>\d+) (?P=Now)\b", r"(?P<Now>\d+) (?P=Now)"),  # group names keep their case
        (r"\S+\W\bup\b", r"\S+\Wup"),  # upper-case escapes are classes, not letters
        (r"(?<![\w.])\+\d+(?=%)|(?!x)y", r"\+\d+|y"),  # lookarounds are assertions too
        (r"(?<!\w)a(?=[)]b)c", "ac"),  # a class's ")" does not close the group
        (r"a(?=[(]b)c", None),  # a "(" in it may open a group: no cheap test, to be safe
        (r"cut at (?=(?-i:[A-Z]))", "cut at "),  # the upper case was in the dropped lookahead
        (r"cut at (?-i:[A-Z])", None),  # must see the text's case
        (r"(?=(x))\1", None),  # dropping the group would renumber the groups after it
        (r"(?<!\w", None),  # a group left open
        (r"[a-z", None),  # a class left open
        (r"[\x41]pple", None),  # a letter written by its code, in a class
        (r"\x41pple", None),  # a letter written by its code
    ],
)
def test_relaxed_drops_word_boundaries_and_refuses_what_it_cannot_relax(
    source: str, expected: str | None
) -> None:
    assert relaxed(source) == expected


def test_every_grammar_and_topic_pattern_has_a_cheap_test() -> None:
    assert [p.pattern.pattern for p in GRAMMAR if p._gate is None] == []
    assert [p.pattern.pattern for p in GRAMMAR if not p._literals] == []


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        (r"\bshort interest\b", ("short interest",)),
        (r"\bnew (?:high|low)s?\b", ("new ",)),  # the longest literal run
        (r"\b(?:beats?|tops) (?:estimates|views)\b", ("estimates", "views")),
        (r"\b(?:starts?|started|starting)\b", ("start",)),  # "started" holds "start"
        (r"\b(?:raised|ups)\b", ("raised", "ups")),  # every branch, however short
        (r"(?:ab)*c|(?:d)+", ("c", "d")),  # a repeat taken at least once needs its body
        (r"\bX{0,2}\d+", None),  # an optional repeat needs nothing
        (r"\b(?:cut|\d+)\b", None),  # a branch without a literal: the alternation needs none
        (r"(?<=%) (?:growth|rise) in", ("growth", "rise")),  # an assertion is not in the match
        (r"(?!abc)xy", ("xy",)),
        (r"caf\u00e9 [é]x", ("caf",)),  # a character beyond ASCII ends a run
        (r"CUT (?-i:[A-Z])", ("cut ",)),  # compared with the lower-cased text
        (r"\x41pple", ("apple",)),  # a letter written by its code is a letter
        (r"\w+", None),
        (r"(?:a|)b", ("b",)),  # an empty branch needs nothing: the literal after it does
        (r"(a)\1", ("a",)),  # a back reference ends a run
        ("", None),  # the empty pattern matches everywhere
    ],
)
def test_necessary_literals_are_what_every_match_holds(
    source: str, expected: tuple[str, ...] | None
) -> None:
    assert necessary_literals(source) == expected


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_every_match_of_a_grammar_pattern_holds_one_of_its_literals(data: st.DataObject) -> None:
    """A text drawn to match a pattern, in any case: one of the pattern's literals is in it,
    lower-cased (else the `in` test would hide the match)."""
    target = data.draw(st.sampled_from(GRAMMAR))
    ascii_text = st.characters(codec="ascii", exclude_categories=("Cc",))
    text = data.draw(st.from_regex(target.pattern, alphabet=ascii_text, fullmatch=True))
    literals = necessary_literals(target.pattern.pattern)
    assert literals is not None
    assert any(literal in text.lower() for literal in literals)


@settings(max_examples=400, deadline=None)
@given(st.data())
def test_sub_and_search_equal_re_on_text_written_to_match(data: st.DataObject) -> None:
    """Texts drawn to match one of the grammar's patterns, in any case, amid other words: every
    pattern's `sub` and `search` on them equal `re`'s."""
    target = data.draw(st.sampled_from(GRAMMAR))
    ascii_text = st.characters(codec="ascii", exclude_categories=("Cc",))
    words = st.lists(st.sampled_from(WORDS), max_size=4).map(" ".join)
    text = " ".join(
        (
            data.draw(words),
            data.draw(st.from_regex(target.pattern, alphabet=ascii_text)),
            data.draw(words),
        )
    )
    for pattern in GRAMMAR:
        assert pattern.sub(" token ", text) == pattern.pattern.sub(" token ", text)
        found, expected = pattern.search(text), pattern.pattern.search(text)
        assert (found and found.span()) == (expected and expected.span())
        assert pattern.findall(text) == pattern.pattern.findall(text)
    # the rules in turn, as the grammar runs them: the text changes between them
    expected_text = text
    for pattern, token in RULES:
        expected_text = pattern.pattern.sub(f" {token} ", expected_text)
    assert substitute_each(RULES, text, around=" ") == expected_text


def test_each_rule_reads_the_text_the_rules_before_it_left() -> None:
    """A rewrite can make the text a later rule matches: its cheap test sees the rewritten text."""
    rules = [(Caseless(r"\bfoo\b"), "bar baz"), (Caseless(r"\bbar baz\b"), "qux")]
    assert substitute_each(rules, "a FOO b") == "a qux b"
    # a rewrite beyond ASCII sends the rules after it to the real search
    rules = [(Caseless(r"\bfoo\b"), "caf\u00e9 bar"), (Caseless(r"\bcaf. bar\b"), "qux")]
    assert substitute_each(rules, "foo") == "qux"
    assert substitute_each(rules[1:], "Caf\u00e9 bar", around=" ") == " qux "


def test_text_beyond_ascii_goes_to_the_real_search() -> None:
    squeeze = Caseless(r"\bshort squeeze\b")
    # "ſ" (long s) folds to "s" in a case-insensitive match, but lower-cases to itself
    assert squeeze.sub("shortsqueeze", "a ſhort squeeze") == "a shortsqueeze"
    assert not squeeze.cannot_match("a ſhort squeeze")
    assert squeeze.cannot_match("a long squeeze")
    # and a pattern's character beyond ASCII (the Kelvin sign) may fold to a letter of the text
    kelvin = Caseless("\u212aelvin")
    assert kelvin.search("KELVIN") is not None
    assert kelvin.search("kelvin") is not None


def test_a_finance_sentence_reads_the_same_as_before() -> None:
    """The grammar's own output on a sentence that hits phrases, ratings and plain forms."""
    text = "Shares gap up after Acme beats estimates; upgraded to buy at Credit Suisse, up 5 pct"
    assert finance_grammar.read_finance(text) == _uncached_read(text)


class _Uncached(Caseless):
    """A Caseless pattern without its cheap tests: every `sub` is `re`'s."""

    def misses(self, lowered: str) -> bool:
        return False


def _uncached_read(text: str) -> str:
    """`read_finance` with every Caseless pattern replaced by one without its cheap tests."""
    saved = {}
    for module, name in (
        (lexicon, "COMPILED_PHRASES"),
        (finance_grammar, "_PLAIN_PHRASES"),
        (finance_grammar, "_RATINGS"),
        (finance_grammar, "_STANCES"),
    ):
        saved[module, name] = getattr(module, name)
        setattr(module, name, tuple((_Uncached(p.source), t) for p, t in getattr(module, name)))
    try:
        return finance_grammar.read_finance(text)
    finally:
        for (module, name), value in saved.items():
            setattr(module, name, value)
