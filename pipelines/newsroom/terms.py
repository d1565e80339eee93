"""Alternations of many literal terms as one trie-shaped regex, which `re` matches much faster.

`re` tries an alternation's branches one after the other at every position of the text, so a
pattern of a few hundred aliases costs a few hundred attempts per character. The same terms as a
trie (`b(?:ear|ull)` rather than `bear|bull`) cost about one attempt per character, and match
exactly the same text: at a position, the longest term that matches (its tail included) wins,
as in an alternation of the terms sorted longest first.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable

Tail = Callable[[str], str]
"""The regex that must follow a term, from the term's last character ("" for none)."""

Node = dict[str, "Node"]
"""A trie node: the next character (or `_END`) to the node it leads to."""

_END = ""
"""The trie key marking that a term ends at a node (no character is the empty string)."""


def _fold(term: str) -> str:
    # Keys are lower case, so 'A' and 'a' share a node (the pattern is compiled IGNORECASE).
    return "".join(c.lower() if len(c.lower()) == 1 else c for c in term)


def trie_alternation(terms: Iterable[str], tail: Tail = lambda last: "") -> str:
    """Regex source matching, under re.IGNORECASE, what the alternation of `terms` sorted longest
    first, each followed by `tail(its last character)`, matches; "" when there are no terms."""
    root: Node = {}
    for term in terms:
        if term:
            node = root
            for char in _fold(term):
                node = node.setdefault(char, {})
            node[_END] = {}
    return _branches(root, "", tail) if root else ""


def _branches(node: Node, last: str, tail: Tail) -> str:
    # Longer terms first: every child before the end of a term at this node (which is tried last).
    options = [re.escape(c) + _branches(child, c, tail) for c, child in sorted(node.items()) if c]
    if _END in node:
        options.append(tail(last))
    return options[0] if len(options) == 1 else "(?:" + "|".join(options) + ")"


def word_tail(last: str) -> str:
    """A term ending in a letter or digit must end a word; one ending in punctuation need not."""
    return r"(?!\w)" if last.isalnum() else ""


def term_pattern(terms: Iterable[str]) -> re.Pattern[str]:
    """Whole-word, case-insensitive matches of any of `terms`, longest first.

    A term starting (ending) with a letter or digit must start (end) a word; the same matches as
    `(?<!\\w)term(?!\\w)` alternatives sorted longest first, as one trie.
    """
    unique = sorted(set(terms))
    bounded = trie_alternation((t for t in unique if t[:1].isalnum()), word_tail)
    free = trie_alternation((t for t in unique if t and not t[0].isalnum()), word_tail)
    parts = ([rf"(?<!\w){bounded}"] if bounded else []) + ([free] if free else [])
    return re.compile("|".join(parts) or r"(?!x)x", re.IGNORECASE)
