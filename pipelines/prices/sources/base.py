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
BAR_FIELDS = ("symbol", "date", "open", "high", "low", "close", "volume")

RAW_INSTRUMENTS_SCHEMA = pl.Schema({c: pl.String() for c in (*INSTRUMENT_FIELDS, *PROVENANCE)})
RAW_BARS_SCHEMA = pl.Schema({c: pl.String() for c in (*BAR_FIELDS, *PROVENANCE)})
UNREADABLE_SCHEMA = pl.Schema({c: pl.String() for c in (*PROVENANCE, "reason")})
"""Records a connector could not even split into fields (wrong header, garbage line, bad bytes)."""


class SourceError(RuntimeError):
    """A source could not be read at all (network failure, refused request): the run must fail."""


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
class RawBars:
    """Daily bar rows as read, all strings (`RAW_BARS_SCHEMA`, date as text), plus unreadable records."""

    rows: pl.DataFrame
    unreadable: pl.DataFrame = field(default_factory=lambda: unreadable([]))

    @staticmethod
    def concat(parts: Sequence[RawBars]) -> RawBars:
        return RawBars(
            rows=pl.concat([RAW_BARS_SCHEMA.to_frame(), *(p.rows for p in parts)]),
            unreadable=pl.concat([UNREADABLE_SCHEMA.to_frame(), *(p.unreadable for p in parts)]),
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

    @property
    def incremental(self) -> bool:
        """Whether fetching only recent bars saves work (HTTP yes; a local file drop is cheap)."""
        return False
