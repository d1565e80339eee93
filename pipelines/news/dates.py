"""Dates feedparser refuses: RFC 822 with day and month names in other languages, and ISO 8601.

feedparser reads RFC 822 only with English names (`Tue, 05 Mar 2024 ...`); real feeds in
Portuguese, Spanish, French and German write the same shape with their own abbreviations
(`Ter, 05 Mar 2024 14:30:00 -0300`, `Qua, 12 Fev 2025 08:00:00 GMT`). Those names are looked up
in a table and replaced by the English month, then read like any RFC 822 date.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Callable
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime

_ENGLISH_MONTHS = (
    "Jan",
    "Feb",
    "Mar",
    "Apr",
    "May",
    "Jun",
    "Jul",
    "Aug",
    "Sep",
    "Oct",
    "Nov",
    "Dec",
)

_MONTH_NAMES: tuple[tuple[str, ...], ...] = (
    # Portuguese, Spanish, French and German names and abbreviations of each month, written
    # without accents and lower-cased (see `_folded`); English ones are read by email.utils.
    ("jan", "janeiro", "ene", "enero", "janv", "janvier", "januar"),
    ("fev", "fevereiro", "feb", "febrero", "fevr", "fevrier", "februar", "febr"),
    ("mar", "marco", "marzo", "mars", "marz", "mrz"),
    ("abr", "abril", "avr", "avril", "april", "apr"),
    ("mai", "maio", "may", "mayo"),
    ("jun", "junho", "junio", "juin", "juni"),
    ("jul", "julho", "julio", "juil", "juillet", "juli"),
    ("ago", "agosto", "aout", "aug", "august"),
    ("set", "setembro", "sep", "sept", "septiembre", "setiembre", "septembre", "september"),
    ("out", "outubro", "oct", "octubre", "octobre", "okt", "oktober"),
    ("nov", "novembro", "noviembre", "novembre", "november"),
    ("dez", "dezembro", "dic", "diciembre", "dec", "decembre", "dezember"),
)
MONTHS: dict[str, str] = {
    name: _ENGLISH_MONTHS[number] for number, names in enumerate(_MONTH_NAMES) for name in names
}
"""Foreign month name or abbreviation (folded) -> the English abbreviation RFC 822 uses."""

DAY_NAMES: frozenset[str] = frozenset(
    {
        # Portuguese
        *("dom", "seg", "ter", "qua", "qui", "sex", "sab"),
        *("domingo", "segunda", "terca", "quarta", "quinta", "sexta", "sabado"),
        *("segunda-feira", "terca-feira", "quarta-feira", "quinta-feira", "sexta-feira"),
        # Spanish
        *("lun", "mar", "mie", "jue", "vie"),
        *("lunes", "martes", "miercoles", "jueves", "viernes"),
        # French
        *("dim", "mer", "jeu", "ven", "sam"),
        *("lundi", "mardi", "mercredi", "jeudi", "vendredi", "samedi", "dimanche"),
        # German
        *("mo", "di", "mi", "do", "fr", "sa", "so"),
        *("montag", "dienstag", "mittwoch", "donnerstag", "freitag", "samstag", "sonntag"),
    }
)
"""Foreign day names and abbreviations (folded); a date's day name is dropped, never checked."""


def read_date(raw: str) -> datetime | None:
    """`raw` as a UTC instant, or None: RFC 822 (English or foreign names), then ISO 8601.

    A date without a zone is UTC (the file-drop rule). Never raises.
    """
    readers: tuple[Callable[[str], datetime | None], ...] = (
        parsedate_to_datetime,
        _foreign_rfc822,
        datetime.fromisoformat,
    )
    for read in readers:
        try:
            instant = read(raw)
            if instant is not None:
                return _in_utc(instant)
        # A refused form raises ValueError (TypeError or IndexError from older email.utils); a
        # date at the edge of the calendar overflows when moved to UTC.
        except (TypeError, ValueError, IndexError, OverflowError):
            continue
    return None


def _in_utc(instant: datetime) -> datetime:
    return instant.replace(tzinfo=UTC) if instant.tzinfo is None else instant.astimezone(UTC)


def _foreign_rfc822(raw: str) -> datetime | None:
    """An RFC 822 date whose month (and day) name is Portuguese, Spanish, French or German."""
    tokens = raw.split()
    if not tokens:
        return None
    english = [_in_english(token) for token in tokens]
    if english == tokens:
        return None  # no foreign month: nothing email.utils has not already refused
    # email.utils drops a first word ending with a comma, or an English day name; a foreign day
    # name without its comma is dropped here. `mar` is a day (es, fr) and a month: both are tried.
    candidates = [english[1:], english] if _folded(tokens[0]) in DAY_NAMES else [english]
    for candidate in candidates:
        try:
            return parsedate_to_datetime(" ".join(candidate))
        except (TypeError, ValueError, IndexError):
            continue
    return None


def _in_english(token: str) -> str:
    """A foreign month as its English abbreviation, a German day of the month (`5.`) as `5`."""
    if token.endswith(".") and token[:-1].isdigit():
        return token[:-1]
    return MONTHS.get(_folded(token), token)


def _folded(token: str) -> str:
    """A name as the tables hold it: lower-cased, accents removed, a trailing `.` or `,` dropped."""
    decomposed = unicodedata.normalize("NFKD", token.lower().rstrip(".,"))
    return "".join(c for c in decomposed if not unicodedata.combining(c))
