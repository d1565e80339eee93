"""How much what a sentence says counts: negated, hedged, or only the yardstick the news is read by.

The grammar (`finance_grammar`) reads what happened: a figure's move, a rating, a beat. These rules
read how it is said, after the grammar, over the words of each clause:

- **Yardsticks** carry no news of their own: the consensus a result will be read against
  ("economists expect payrolls to rise") and a result that only matched it ("core CPI rose 0.3%,
  in line with forecasts"). Their moves are rewritten to the neutral `figure`. A forecast stated
  in the news ("sales are expected to rise") is news about the outlook and keeps its reading.
- **Negation** flips the three words of its clause after a negator, fillers not counted: "failed
  to win approval", "does not expect demand to recover", "no longer expects a loss"; verbs of
  prevention negate what they prevent ("averting a default"). VADER looks only three words back
  and stops at any word of its lexicon, so it missed these.
- **Questions** are hedged: "Is Nike a buy?" states nothing.

A negated or hedged word is rewritten with a prefix (`not_rise`, `hedge_surge`) that the enricher's
lexicon scores as the word's valence times the rule's factor (`scoped_valences`).
"""

from __future__ import annotations

import re
import string
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from vaderSentiment.vaderSentiment import BOOSTER_DICT, N_SCALAR, NEGATE

GOOD_NEWS = "finup"
BAD_NEWS = "findown"
MEASURED = "figure"
"""What a figure's word becomes once its move is read: the move carries the sentiment."""
UP_MOVE = "upmove"
DOWN_MOVE = "downmove"
"""Phrase tokens of a move in percent ("up 3%", "-2.5%"), read as moves of their subject."""
MOVES = frozenset({GOOD_NEWS, BAD_NEWS, UP_MOVE, DOWN_MOVE})

NEGATED = "not_"
HEDGED = "hedge_"
NEGATION_FACTOR = N_SCALAR
"""A negated word counts as VADER counts one: its valence times -0.74."""
HEDGE_FACTOR = 0.35
"""A hedged word (in a question) counts about a third."""


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


CLAUSE_ENDS = _words("but while whereas although though as after despite amid when and because")


@dataclass(frozen=True)
class Word:
    """One whitespace-separated word of the text, and its lower-case letters for matching."""

    text: str
    key: str
    ends_clause: bool


def words_of(text: str) -> list[Word]:
    words = []
    for raw in text.split():
        key = raw.strip(".,;:!?\"'()[]").lower()
        words.append(Word(raw, key, raw[-1:] in ",;:" or key in CLAUSE_ENDS))
    return words


def scoped_valences(lexicon: Mapping[str, float]) -> dict[str, float]:
    """The lexicon with every word's negated, hedged and hedged negated forms."""
    negated = {NEGATED + word: valence * NEGATION_FACTOR for word, valence in lexicon.items()}
    plain = {**lexicon, **negated}
    return plain | {HEDGED + word: valence * HEDGE_FACTOR for word, valence in plain.items()}


def read_scopes(text: str) -> str:
    """Yardsticks neutralised, then negations flipped, then hedges weakened."""
    return read_hedges(read_negations(read_yardsticks(text)))


def _prefixed(text: str, prefix: str) -> str:
    """`prefix` before the word's first letter ('"Save' -> '"not_Save'); other text, and VADER's
    intensifiers (which must stay themselves to strengthen the next word: "not so happy"), as is."""
    start = next((i for i, c in enumerate(text) if c.isalpha()), None)
    if start is None or text.strip(string.punctuation).lower() in BOOSTER_DICT:
        return text
    return text[:start] + prefix + text[start:]


# negation --------------------------------------------------------------------------------------

_NEGATORS = frozenset(NEGATE) - {"despite", "rarely", "seldom", "neither", "nor"}
"""VADER's negators, less those it uses for contrast ("despite") or that rarely negate a move."""
_PHRASE_NEGATORS = frozenset(
    {
        ("no", "longer"),
        ("fail", "to"),
        ("fails", "to"),
        ("failed", "to"),
        ("failing", "to"),
        ("unable", "to"),
    }
)
_PREVENTS = _words(
    """avert averts averted averting avoid avoids avoided avoiding prevent prevents prevented
    preventing stop stops stopped stopping halt halts halted halting stem stems stemmed stemming
    derail derails derailed hide hides dispel dispels dispelled allay allays allayed"""
)
"""Verbs that keep what follows from happening ("averting a default", "halts the rally"): they
negate their object and keep their own valence."""
_PHRASE_PREVENTS = frozenset(
    (verb, "off")
    for verb in _words(
        """fend fends fended stave staves staved ward wards warded head heads headed shake shakes
        shook shrug shrugs shrugged"""
    )
)
"""'shrugs off weak data', 'staves off bankruptcy': the same, as a verb and `off`."""
_EMPHASIS = frozenset({"this", "so", "more", "as"})
"""After `never` (been), emphasis, not negation: "never been this bullish" (as VADER reads it)."""
_NOT_NEGATING = frozenset(
    {
        ("not", "only"),
        ("not", "just"),
        ("not", "least"),
        ("no", "doubt"),
        ("without", "doubt"),
        ("without", "warning"),
    }
)
_FIRST_WORDS = (
    _NEGATORS
    | _PREVENTS
    | {"no", "never"}
    | {pair[0] for pair in _PHRASE_NEGATORS | _PHRASE_PREVENTS}
)
"""The words a negator can start with: most words of a text are none, and skipped at once."""
_SCOPE_STOPS = CLAUSE_ENDS | _words(
    "due amid following since until unless if than thanks into at for"
)
"""Words that end what a negator governs: a cause, a condition or a new phrase begins."""
_FILLERS = _words(
    "to be been being a an the its their his her any have has had this that much very too yet"
)
"""Words a negator passes over without counting them among the three it governs."""
_SCOPE_WORDS = 3
NOT_ENOUGH = "notenough"
"""`enough` negated ("not enough to lift demand", "not strong enough"): something falls short."""


def read_negations(text: str) -> str:
    """Each word governed by an odd number of negators prefixed `not_` ("fails to stop the
    sell-off" negates twice: still bad news); the negators themselves dropped (VADER would negate
    again), the verbs of prevention kept."""
    words = words_of(text)
    if not any(_may_negate(w.key) for w in words):
        return text
    out = [w.text for w in words]
    flips = [0] * len(words)
    i = 0
    while i < len(words):
        if words[i].key == "never" and _emphasis_follows(words, i):
            out[i] = ""  # emphasis; dropped, or VADER would read it as a negation
        size, drop = _negator_at(words, i)
        scope = _scope(words, i + size - 1) if size else []
        for k in scope:
            flips[k] += 1
        if scope and drop:
            out[i : i + size] = [""] * size
        i += max(size, 1)
    for k, count in enumerate(flips):
        if count % 2 and out[k]:
            out[k] = NOT_ENOUGH if words[k].key == "enough" else _prefixed(out[k], NEGATED)
    return " ".join(w for w in out if w)


def _may_negate(key: str) -> bool:
    return key in _FIRST_WORDS or key.endswith(("n't", "n’t"))


def _negator_at(words: Sequence[Word], i: int) -> tuple[int, bool]:
    """How many words the negator starting at word i has (0: none), and whether it is dropped."""
    key = words[i].key
    if not _may_negate(key):
        return 0, False
    pair = (key, words[i + 1].key) if i + 1 < len(words) else (key,)
    if pair in _NOT_NEGATING or (key == "never" and _emphasis_follows(words, i)):
        return 0, False
    if pair in _PHRASE_NEGATORS:
        return 2, True
    if pair in _PHRASE_PREVENTS:
        return 2, False
    if key in _PREVENTS:
        return 1, False
    return (
        (1, True) if key in _NEGATORS or key == "no" or key.endswith(("n't", "n’t")) else (0, False)
    )


def _emphasis_follows(words: Sequence[Word], i: int) -> bool:
    following = [w.key for w in words[i + 1 : i + 3]]
    if following[:1] == ["been"]:
        following = following[1:]
    return bool(following) and following[0] in _EMPHASIS


def _scope(words: Sequence[Word], last: int) -> list[int]:
    """The words after word `last` that it governs: three, not counting fillers, to the end of
    the clause or a word that starts a new phrase."""
    if words[last].ends_clause:
        return []
    scope: list[int] = []
    counted = 0
    for k in range(last + 1, len(words)):
        if words[k].key in _SCOPE_STOPS or counted == _SCOPE_WORDS:
            break
        scope.append(k)
        counted += words[k].key not in _FILLERS
        if words[k].ends_clause or words[k].text.endswith((".", "!", "?")):
            break
    return scope


# hedges ----------------------------------------------------------------------------------------

_SENTENCE_ENDS = re.compile(r"(?<=[.!?;:])\s+|\s+[-–—|]\s+")


def read_hedges(text: str) -> str:
    """Each question hedged, sentence by sentence ("Is bitcoin going to zero? Fear spreads":
    only the question)."""
    return " ".join(_hedge_sentence(s) for s in _SENTENCE_ENDS.split(text) if s)


def _hedge_sentence(sentence: str) -> str:
    if not sentence.rstrip().endswith("?"):
        return sentence
    return " ".join(_prefixed(w, HEDGED) for w in sentence.split())


# yardsticks ------------------------------------------------------------------------------------

_CONSENSUS = re.compile(
    r"\b(?:analysts|economists|strategists|forecasters|markets|traders|investors|consensus"
    r"|polls?|surveys?|(?:a|the)\s+\w+\s+poll)\s+(?:had\s+|have\s+|now\s+)?"
    r"(?:expect|expects|expected|forecast|forecasts|predict|predicts|estimate|estimates"
    r"|anticipate|anticipates|project|projects)\b",
    re.IGNORECASE,
)
"""The consensus a result will be read against: "economists expect payrolls to rise"."""
_IN_LINE = re.compile(
    r"\b(?:in[- ]line(?:\s+with\s+(?:\w+\s+){0,2}(?:expectations|estimates|forecasts?"
    r"|consensus|guidance|projections|the\s+(?:forecast|estimate|consensus)))?"
    r"|as\s+(?:expected|forecast|anticipated|estimated)"
    r"|(?:met|meets|meet|matched|matches|match)\s+(?:\w+\s+)?(?:expectations|estimates|forecasts"
    r"|consensus))",
    re.IGNORECASE,
)
"""A result that only matched the yardstick: "rose 0.3%, in line with forecasts", "as expected"."""


def read_yardsticks(text: str) -> str:
    """Moves that only match the yardstick, or are the consensus itself, made neutral."""
    return " ".join(_yardstick_sentence(s) for s in _SENTENCE_ENDS.split(text) if s)


def _yardstick_sentence(sentence: str) -> str:
    in_line = _IN_LINE.search(sentence)
    if in_line is not None:
        # the moves the phrase is about: those before it in its clause ("CPI rose 0.3%, in line
        # with forecasts"), not the news around it ("Camtek surges as shipments are in line")
        before = words_of(sentence[: in_line.start()])
        start = max((k + 1 for k, w in enumerate(before) if w.key in CLAUSE_ENDS), default=0)
        kept = " ".join(w.text for w in before[:start])
        return " ".join([kept, _neutral_moves(before[start:]), sentence[in_line.start() :]])
    consensus = _CONSENSUS.search(sentence)
    if consensus is None:
        return sentence
    after = words_of(sentence[consensus.end() :])
    return sentence[: consensus.end()] + " " + _neutral_moves(after)


def _neutral_moves(words: Sequence[Word]) -> str:
    return " ".join(_neutral(w) if w.key in MOVES else w.text for w in words)


def _neutral(word: Word) -> str:
    # the word's punctuation kept: negation and hedges read clause and sentence ends
    return MEASURED + word.text[len(word.text.rstrip(".,;:!?")) :]
