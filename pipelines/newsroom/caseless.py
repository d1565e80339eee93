"""Case-insensitive patterns over news text, with an exact cheap test before the real search.

Python's `re` cannot skip ahead to a case-insensitive pattern that starts with `\\b`: it tries the
pattern at every position of the text, about 1.2 µs for a sentence of 87 characters, where a
pattern it can find by its first letters costs 0.1 µs. The finance grammar runs a hundred such
patterns over every title and body, and most texts match none of them.

A `Caseless` pattern therefore first searches the lower-cased text with a relaxed copy of itself:
case-sensitive, and without its assertions (`\\b`, lookahead and lookbehind). On ASCII text, a
case-insensitive pattern whose letters are all lower case matches exactly where its
case-sensitive copy matches the lower-cased text, and removing an assertion only adds matches.
So when the relaxed copy finds nothing, the pattern finds nothing either, and `sub` returns the text as it is, as `re` would. Text that is
not ASCII, and a pattern with an upper-case letter (`(?-i:[A-Z])` must see the text's case) or a
character written as a code (`\\x41`), skip the test and go straight to the real search.

Before that search, a cheaper test still: the literal strings one of which every match must
contain (`necessary_literals`: " from" for `\\b(?:cut|moved) from\\b`, any of "estimates" and
"views" for `\\b(?:beats?|tops) (?:estimates|views)\\b`), looked for in the lower-cased text with
`in`, which costs a fraction of a regular expression's search. Most of the grammar's patterns fail
it on most texts.
"""

from __future__ import annotations

import re
import re._constants as sre
import re._parser as sre_parse
from collections.abc import Callable, Iterable, Sequence
from functools import cached_property
from typing import Any

_CODED = frozenset("xuUN0")
"""Escapes that write a character by its code: it could be an upper-case letter."""
_LOOKAROUNDS = ("(?=", "(?!", "(?<=", "(?<!")
_REPEATS = (sre.MAX_REPEAT, sre.MIN_REPEAT, sre.POSSESSIVE_REPEAT)
_GROUP = re.compile(r"\((?!\?)|\(\?P<")
"""A capturing group's opening (a "(" escaped as "\\(" may be taken for one: no gate, no harm)."""


def relaxed(source: str) -> str | None:
    """`source` without its assertions (`\\b` outside character classes, lookaheads and
    lookbehinds), or None when the relaxed copy could miss a match: an upper-case letter, a
    character written by its code, or a group or class left open."""
    out: list[str] = []
    i = 0
    while i < len(source):
        c = source[i]
        if c == "\\":
            escape = source[i + 1 : i + 2]
            if escape in _CODED:
                return None
            if escape != "b":
                out.append(c + escape)
            i += 2
        elif source.startswith(_LOOKAROUNDS, i):
            end = _group_end(source, i)
            if end < 0 or _GROUP.search(source, i + 3, end):
                return None  # dropping a group inside it would renumber the groups after it
            i = end
        elif source.startswith("(?P", i):
            # a group's name, or a reference to one: its letters are not matched against the text
            end = source.find(">" if source.startswith("(?P<", i) else ")", i) + 1
            if end <= 0:
                return None
            out.append(source[i:end])
            i = end
        elif c == "[":  # a class is kept whole: a "\\b" in it is a backspace
            end = _class_end(source, i)
            if end < 0 or not _lower_case(source[i:end]):
                return None
            out.append(source[i:end])
            i = end
        elif c.isupper():
            return None
        else:
            out.append(c)
            i += 1
    return "".join(out)


def _class_end(source: str, start: int) -> int:
    """The position after the "]" that closes the class opened at `start`; -1 when none does.
    A "]" first in a class (after an optional "^") is a literal, not its end."""
    i = start + 1
    i += source.startswith("^", i)
    i += source.startswith("]", i)
    while i < len(source):
        if source[i] == "\\":
            i += 2
        elif source[i] == "]":
            return i + 1
        else:
            i += 1
    return -1


def _lower_case(part: str) -> bool:
    """No upper-case letter in `part` outside escapes, and no character written by its code."""
    i = 0
    while i < len(part):
        if part[i] == "\\":
            if part[i + 1 : i + 2] in _CODED:
                return False
            i += 2
        elif part[i].isupper():
            return False
        else:
            i += 1
    return True


def _group_end(source: str, start: int) -> int:
    """The position after the ")" that closes the group opened at `start`; -1 when none does."""
    depth, i = 0, start
    while i < len(source):
        c = source[i]
        if c == "\\":
            i += 2
            continue
        if c == "[":
            i = _class_end(source, i)
            if i < 0:
                return -1
            continue
        depth += (c == "(") - (c == ")")
        i += 1
        if depth == 0:
            return i
    return -1


def necessary_literals(source: str) -> tuple[str, ...] | None:
    """Lower-case ASCII strings one of which is in the lower-cased text of every match of
    `source` (case-insensitive, on ASCII text), as few and as long as the pattern gives; None
    when it names none (every branch of an alternation must name one)."""
    found = _literals_of(sre_parse.parse(source, re.IGNORECASE))
    return None if found is None else tuple(sorted(found))


def _literals_of(items: Sequence[tuple[Any, Any]]) -> frozenset[str] | None:
    """The best necessary set of a sequence: each run of literal characters is one, and so is
    what a group, an alternation (all its branches' sets together) or a repeat taken at least
    once needs. Anything else (a class, an assertion, a character beyond ASCII) ends a run."""
    candidates: list[frozenset[str]] = []
    run: list[str] = []

    def end_run() -> None:
        if run:
            candidates.append(frozenset(["".join(run)]))
            run.clear()

    for op, value in items:
        if op is sre.LITERAL and chr(value).isascii():
            run.append(chr(value).lower())
            continue
        end_run()
        needed: frozenset[str] | None = None
        if op is sre.SUBPATTERN:
            needed = _literals_of(value[3])
        elif op is sre.ATOMIC_GROUP:
            needed = _literals_of(value)
        elif op is sre.BRANCH:
            branches = [_literals_of(branch) for branch in value[1]]
            if all(b is not None for b in branches):
                needed = frozenset().union(*(b for b in branches if b is not None))
        elif op in _REPEATS and value[0] >= 1:
            needed = _literals_of(value[2])
        if needed is not None:
            candidates.append(needed)
    end_run()
    return max(map(_fewest, candidates), key=_selectivity, default=None)


def _fewest(literals: frozenset[str]) -> frozenset[str]:
    """The set without a literal that holds another: where it is found, so is the other."""
    return frozenset(a for a in literals if not any(b != a and b in a for b in literals))


def _selectivity(literals: frozenset[str]) -> tuple[int, int]:
    """Longer literals are rarer in text, and fewer are cheaper to look for."""
    return min(map(len, literals)), -len(literals)


class Caseless:
    """`re.compile(source, re.IGNORECASE)` whose `sub`, `search` and `findall` run cheap exact
    tests first.

    Compiled on first use, not when made: the grammar's hundred patterns are built when their
    modules are imported, by every `mi` process, and most (a daily run, the API) never read news.
    """

    def __init__(self, source: str) -> None:
        self.source = source

    @cached_property
    def pattern(self) -> re.Pattern[str]:
        return re.compile(self.source, re.IGNORECASE)

    @cached_property
    def _gate(self) -> re.Pattern[str] | None:
        gate = relaxed(self.source)
        return re.compile(gate) if gate is not None else None

    @cached_property
    def _literals(self) -> tuple[str, ...] | None:
        # Even two dozen `in` tests cost less than one search (measured on the grammar's patterns)
        return necessary_literals(self.source)

    def cannot_match(self, text: str) -> bool:
        """True only when the pattern surely has no match in `text`."""
        return text.isascii() and self.misses(text.lower())

    def misses(self, lowered: str) -> bool:
        """`cannot_match` of an ASCII text, given lower-cased."""
        literals = self._literals
        if literals:
            for literal in literals:
                if literal in lowered:
                    break
            else:
                return True
        gate = self._gate
        return gate is not None and gate.search(lowered) is None

    def sub(self, repl: str | Callable[[re.Match[str]], str], text: str) -> str:
        return text if self.cannot_match(text) else self.pattern.sub(repl, text)

    def search(self, text: str) -> re.Match[str] | None:
        return None if self.cannot_match(text) else self.pattern.search(text)

    def findall(self, text: str) -> list[Any]:
        return [] if self.cannot_match(text) else self.pattern.findall(text)


def substitute_each(rules: Iterable[tuple[Caseless, str]], text: str, around: str = "") -> str:
    """`text` after `pattern.sub(around + word + around, text)` for each rule (pattern, word) in
    turn, exactly; the text is lower-cased for the cheap tests once, and again only after a rule
    changed it, instead of once a rule (the phrase rewrites alone run seventy-seven rules over
    every title and body)."""
    lowered = text.lower() if text.isascii() else None
    for pattern, word in rules:
        if lowered is not None and pattern.misses(lowered):
            continue
        changed = pattern.pattern.sub(f"{around}{word}{around}", text)
        if changed != text:
            text = changed
            lowered = text.lower() if text.isascii() else None
    return text
