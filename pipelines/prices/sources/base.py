"""The connector interface: raw rows as strings, each with where it came from."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date

import polars as pl

PROVENANCE = ("source", "location", "record")
"""Columns every raw row carries: file path or URL, line/row/index inside it, the raw text."""

INSTRUMENT_FIELDS = ("symbol", "name", "logo")
ACTION_FIELDS = ("symbol", "date", "kind", "ratio", "amount", "reason")
BAR_FIELDS = ("symbol", "date", "open", "high", "low", "close", "volume")

RAW_INSTRUMENTS_SCHEMA = pl.Schema({c: pl.String() for c in (*INSTRUMENT_FIELDS, *PROVENANCE)})
RAW_ACTIONS_SCHEMA = pl.Schema({c: pl.String() for c in (*ACTION_FIELDS, *PROVENANCE)})
RAW_BARS_SCHEMA = pl.Schema({c: pl.String() for c in (*BAR_FIELDS, *PROVENANCE)})
UNREADABLE_SCHEMA = pl.Schema({c: pl.String() for c in (*PROVENANCE, "reason")})
"""Records a connector could not even split into fields (wrong header, garbage line, bad bytes)."""


class SourceError(RuntimeError):
    """A source could not be read at all (network failure, refused request): the run must fail."""


INVALID_UTF8 = "\ufffd"
"""What a byte that is not UTF-8 reads as (decoded with errors="replace")."""
SHOWN_BODY = 300
"""Characters of an answer's body quoted in an error (enough to recognise an HTML page)."""


@dataclass(frozen=True)
class Answers:
    """What the requests behind some raw bars answered: how many there were, and the unreadable
    ones (body not in the source's wire format, e.g. an HTML page served at HTTP 200), each as
    (URL, body)."""

    requests: int = 0
    unreadable: tuple[tuple[str, str], ...] = ()

    def __add__(self, other: Answers) -> Answers:
        return Answers(self.requests + other.requests, self.unreadable + other.unreadable)


def check_answers(market: str, answers: Answers) -> None:
    """Raise `SourceError` when more than half of a market's answers in a run were unreadable.

    A few unreadable answers are rejects like any bad row; a majority means the source itself is
    broken (an error page, a changed API), and a run that stored its rejects and nothing else
    would hide that. A strict majority with no minimum count: a market asked once (the ECB's one
    request) whose answer is unreadable has nothing usable either.
    """
    count = len(answers.unreadable)
    if 2 * count <= answers.requests:
        return
    urls = sorted({url.split("?", 1)[0] for url, _ in answers.unreadable})
    first_url, first_body = answers.unreadable[0]
    body = " ".join(first_body[:SHOWN_BODY].split())
    raise SourceError(
        f"{market}: {count} of {answers.requests} answers from GET {' | '.join(urls)} were not"
        f" in the source's format; the first, GET {first_url}, began: {body!r}"
    )


def unreadable(rows: Iterable[Mapping[str, str]]) -> pl.DataFrame:
    """Build the frame of records a connector could not split into fields."""
    return pl.DataFrame(list(rows), schema=UNREADABLE_SCHEMA)


@dataclass(frozen=True)
class RawInstruments:
    """Instrument rows as read, all strings (`RAW_INSTRUMENTS_SCHEMA`), plus unreadable records."""

    rows: pl.DataFrame
    unreadable: pl.DataFrame = field(default_factory=lambda: unreadable([]))

    @staticmethod
    def concat(parts: Sequence[RawInstruments]) -> RawInstruments:
        return RawInstruments(
            rows=pl.concat([RAW_INSTRUMENTS_SCHEMA.to_frame(), *(p.rows for p in parts)]),
            unreadable=pl.concat([UNREADABLE_SCHEMA.to_frame(), *(p.unreadable for p in parts)]),
        )


@dataclass(frozen=True)
class RawActions:
    """Corporate action rows as read, all strings (`RAW_ACTIONS_SCHEMA`), plus unreadable records."""

    rows: pl.DataFrame = field(default_factory=RAW_ACTIONS_SCHEMA.to_frame)
    unreadable: pl.DataFrame = field(default_factory=lambda: unreadable([]))


@dataclass(frozen=True)
class RawBars:
    """Daily bar rows as read, all strings (`RAW_BARS_SCHEMA`, date as text), plus unreadable
    records and, for a web source, what its requests answered."""

    rows: pl.DataFrame
    unreadable: pl.DataFrame = field(default_factory=lambda: unreadable([]))
    answers: Answers = field(default_factory=Answers)

    @staticmethod
    def concat(parts: Sequence[RawBars]) -> RawBars:
        return RawBars(
            rows=pl.concat([RAW_BARS_SCHEMA.to_frame(), *(p.rows for p in parts)]),
            unreadable=pl.concat([UNREADABLE_SCHEMA.to_frame(), *(p.unreadable for p in parts)]),
            answers=sum((p.answers for p in parts), Answers()),
        )


class PriceSource(ABC):
    """A connector for one market: its instrument list and its daily bars.

    Implementations return raw strings and never validate: validation is one pure function for every
    connector, so a rule holds the same whichever source is configured.
    """

    name: str
    """Connector name stored in the `source` column of the catalog tables."""

    @abstractmethod
    def instruments(self, market: str) -> RawInstruments:
        """The market's instrument rows."""

    @abstractmethod
    def daily_bars(self, market: str, symbols: Sequence[str], since: date | None) -> RawBars:
        """Bars of `symbols` (canonical upper case) dated `since` or later (all history when None)."""

    def corporate_actions(self, market: str) -> RawActions:
        """The market's corporate action rows; none for a source that reports none (Binance,
        the ECB and Stooq: docs/connectors.md)."""
        return RawActions()

    @property
    def incremental(self) -> bool:
        """Whether fetching only recent bars saves work (HTTP yes; a local file drop is cheap)."""
        return False
