"""ECB euro reference rates (data API, SDMX CSV) for forex; cross rates derived via the euro."""

from __future__ import annotations

import csv
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import date

import polars as pl

from pipelines.prices.sources.base import (
    RAW_BARS_SCHEMA,
    Answers,
    RawBars,
    SourceError,
    unreadable,
)
from pipelines.prices.sources.http import (
    HttpFetcher,
    ListedHttpSource,
    ListedInstrument,
)

NO_RESULTS = 404
"""SDMX REST answers 404 "No results found" when the period holds no observation: an empty page."""


@dataclass(frozen=True)
class Observation:
    """One OBS_VALUE of a EUR-based series, with its line for provenance."""

    value: str
    line: int
    text: str


def pair_currencies(symbol: str, remote: str | None) -> tuple[str, str]:
    """`EURUSD` -> (EUR, USD): price of one base currency unit in the quote currency."""
    code = (remote or symbol).replace("/", "").strip().upper()
    if len(code) != 6 or not code.isalpha():
        raise SourceError(
            f"forex symbol {symbol!r} is not a pair of ISO currency codes (e.g. EURUSD)"
        )
    return code[:3], code[3:]


class EcbSource(ListedHttpSource):
    """EXR daily series `D.<CUR>.EUR.SP00.A`; BASEQUOTE = rate(QUOTE) / rate(BASE), rate(EUR) = 1.

    The ECB publishes one reference rate a day (about 16:00 CET), so open = high = low = close =
    that rate and volume = 0.
    """

    name = "ecb"

    def __init__(
        self,
        listing: Sequence[ListedInstrument],
        config_path: str,
        base_url: str = "https://data-api.ecb.europa.eu",
        start_date: date = date(1999, 1, 4),
        http: HttpFetcher | None = None,
    ) -> None:
        super().__init__(listing, config_path, http)
        self.base_url, self.start_date = base_url.rstrip("/"), start_date

    def daily_bars(self, market: str, symbols: Sequence[str], since: date | None) -> RawBars:
        remotes = self.remote_tickers()
        pairs = {s: pair_currencies(s, remotes.get(s)) for s in symbols}
        currencies = sorted({c for pair in pairs.values() for c in pair} - {"EUR"})
        if not currencies:
            return RawBars(RAW_BARS_SCHEMA.to_frame())
        url = f"{self.base_url}/service/data/EXR/D.{'+'.join(currencies)}.EUR.SP00.A"
        params = {"format": "csvdata", "startPeriod": (since or self.start_date).isoformat()}
        response = self.http.get(url, params, ok=(200, NO_RESULTS))
        if response.status_code == NO_RESULTS:
            return RawBars(RAW_BARS_SCHEMA.to_frame(), answers=Answers(1))
        return parse_exr_bars(response.text, str(response.url), pairs)


def parse_exr_bars(text: str, source: str, pairs: Mapping[str, tuple[str, str]]) -> RawBars:
    """Bars of every pair (symbol -> (base, quote)) from one SDMX CSV answer; bad lines rejected."""
    rates, bad = parse_exr_csv(text, source)
    rows = [row for s, pair in pairs.items() for row in cross_rows(s, pair, rates, source)]
    unreadable_answer = bool(bad) and bad[0]["location"] == "line 1"
    answered = Answers(1, ((source, text),) if unreadable_answer else ())
    return RawBars(pl.DataFrame(rows, schema=RAW_BARS_SCHEMA), unreadable(bad), answered)


def _fields(line: str) -> list[str] | None:
    """The CSV fields of one line, or None when the csv module cannot split it."""
    try:
        return next(csv.reader([line]), [])
    except csv.Error:  # e.g. a field beyond the csv module's size limit
        return None


def parse_exr_csv(
    text: str, source: str
) -> tuple[dict[str, dict[str, Observation]], list[dict[str, str]]]:
    """currency -> TIME_PERIOD -> observation, read by column name; unreadable lines with reasons."""
    lines = text.removeprefix("\ufeff").splitlines()
    header = _fields(lines[0]) if lines else []
    if header is None or not {"CURRENCY", "TIME_PERIOD", "OBS_VALUE"} <= set(header):
        reason = "response is not SDMX CSV with CURRENCY, TIME_PERIOD and OBS_VALUE columns"
        return {}, [
            {"source": source, "location": "line 1", "record": text[:500], "reason": reason}
        ]
    rates: dict[str, dict[str, Observation]] = {}
    bad = []
    for number, line in enumerate(lines[1:], start=2):
        if not line.strip():
            continue
        fields = _fields(line)
        if fields is None or len(fields) != len(header):
            reason = (
                "line cannot be split as CSV"
                if fields is None
                else f"expected {len(header)} fields, found {len(fields)}"
            )
            bad.append(
                {"source": source, "location": f"line {number}", "record": line, "reason": reason}
            )
            continue
        row = dict(zip(header, fields, strict=True))
        series = rates.setdefault(row["CURRENCY"].strip().upper(), {})
        series[row["TIME_PERIOD"].strip()] = Observation(row["OBS_VALUE"].strip(), number, line)
    return rates, bad


def cross_rows(
    symbol: str, pair: tuple[str, str], rates: dict[str, dict[str, Observation]], source: str
) -> list[dict[str, str | None]]:
    """Bars of one pair on every day either leg was published; a missing leg leaves no price."""
    legs = [c for c in pair if c != "EUR"]
    days = sorted({day for c in legs for day in rates.get(c, {})})
    rows: list[dict[str, str | None]] = []
    for day in days:
        observed = {c: rates.get(c, {}).get(day) for c in legs}
        price = _cross(pair, {c: o.value for c, o in observed.items() if o})
        found = [o for o in observed.values() if o]
        missing = [c for c, o in observed.items() if o is None]
        record = " | ".join(o.text for o in found) + "".join(f" | no {c} rate" for c in missing)
        row: dict[str, str | None] = dict.fromkeys(("open", "high", "low", "close"), price)
        location = " + ".join(f"line {o.line}" for o in found)
        row |= {"symbol": symbol, "date": day, "volume": "0", "source": source}
        rows.append(row | {"location": location, "record": record})
    return rows


def _cross(pair: tuple[str, str], values: dict[str, str]) -> str | None:
    """rate(quote) / rate(base) as text, or the raw value when it is not a usable number."""
    base, quote = pair
    try:
        per_euro = {c: float(v) for c, v in values.items()} | {"EUR": 1.0}
        return repr(per_euro[quote] / per_euro[base])
    except KeyError:
        return None
    except (ValueError, ZeroDivisionError):
        return next(iter(values.values()), None) if len(values) == 1 else None
