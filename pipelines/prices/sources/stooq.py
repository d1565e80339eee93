"""Stooq end-of-day CSV (GET /q/d/l/?s=<ticker>&i=d) for stocks and commodities."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, date, datetime

import polars as pl

from pipelines.prices.sources.base import (
    INVALID_UTF8,
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

REQUIRED = ("date", "open", "high", "low", "close")
"""Columns a Stooq CSV must have, found by name in its header (any case, any order)."""
VOLUME = "volume"
"""Absent from some series, and from about half the lines of many index histories: then 0."""
QUOTA_EXCEEDED = "Exceeded the daily hits limit"
NO_DATA = "No data"


class StooqSource(ListedHttpSource):
    """One CSV per ticker: `Date,Open,High,Low,Close[,Volume][,OpenInt]`, columns read by name.

    Tickers default to `<symbol lower case><suffix>` (`.us` for stocks); commodities name theirs
    (`gc.f` gold futures, `cl.f` crude oil).
    """

    name = "stooq"

    def __init__(
        self,
        listing: Sequence[ListedInstrument],
        config_path: str,
        base_url: str = "https://stooq.com",
        suffix: str = ".us",
        params: Mapping[str, str] | None = None,
        http: HttpFetcher | None = None,
    ) -> None:
        super().__init__(listing, config_path, http)
        self.base_url, self.suffix = base_url.rstrip("/"), suffix
        self.params = dict(params or {})

    def daily_bars(self, market: str, symbols: Sequence[str], since: date | None) -> RawBars:
        tickers = self.remote_tickers()
        parts = [self._csv(s, tickers.get(s, f"{s.lower()}{self.suffix}"), since) for s in symbols]
        return RawBars.concat(parts)

    def _csv(self, symbol: str, ticker: str, since: date | None) -> RawBars:
        params: dict[str, str | int] = {"s": ticker, "i": "d", **self.params}
        if since is not None:
            params |= {"d1": f"{since:%Y%m%d}", "d2": f"{datetime.now(UTC).date():%Y%m%d}"}
        response = self.http.get(f"{self.base_url}/q/d/l/", params)
        return parse_stooq_csv(response.text, str(response.url), symbol)


def parse_stooq_csv(text: str, source: str, symbol: str) -> RawBars:
    """Rows of one Stooq CSV body, its columns found by header name (unknown ones ignored).

    A line may stop before its volume (or any column after close): the missing volume is read
    as empty, stored as 0. 'No data' and a body without the columns are rejects; the quota
    message is an error (retrying cannot help until tomorrow).
    """
    body = text.removeprefix("\ufeff")
    if body.startswith(QUOTA_EXCEEDED):
        raise SourceError(f"GET {source}: Stooq refused the request: {body.strip()[:200]}")
    lines = [line.rstrip("\r") for line in body.split("\n")]
    columns = header_columns(lines[0])
    if columns is None:
        no_data = body.strip() == NO_DATA
        reason = (
            f"no data for {symbol}"
            if no_data
            else "response is not Date,Open,High,Low,Close[,Volume] CSV"
        )
        bad = [{"source": source, "location": "body", "record": body[:500], "reason": reason}]
        answered = Answers(1, () if no_data else ((source, body),))
        return RawBars(RAW_BARS_SCHEMA.to_frame(), unreadable(bad), answered)
    frame = pl.DataFrame({"record": lines[1:]}, schema={"record": pl.String}).with_columns(
        source=pl.lit(source),
        symbol=pl.lit(symbol),
        location=pl.format("line {}", pl.int_range(2, len(lines) + 1)),
    )
    frame = frame.filter(pl.col("record").str.strip_chars() != "").rechunk()
    rows, garbage = _split(frame, columns, len(lines[0].split(",")))
    return RawBars(rows.select(RAW_BARS_SCHEMA.names()), garbage, Answers(1))


def header_columns(header: str) -> dict[str, int] | None:
    """Position of each known column in a header line (names trimmed, any case), or None when
    one of `REQUIRED` is missing."""
    names = [name.strip().strip('"').strip().lower() for name in header.split(",")]
    columns: dict[str, int] = {}
    for position, name in enumerate(names):
        if name in (*REQUIRED, VOLUME):
            columns.setdefault(name, position)
    return columns if all(name in columns for name in REQUIRED) else None


def _split(
    lines: pl.DataFrame, columns: dict[str, int], width: int
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Fields of each line by column position; a line with more fields than the header, or too
    few to reach close, is unreadable (as is one with bytes that are not UTF-8)."""
    parts = pl.col("record").str.split(",")
    found = parts.list.len()
    needed = max(columns[name] for name in REQUIRED) + 1
    reason = (
        pl.when(pl.col("record").str.contains(INVALID_UTF8, literal=True))
        .then(pl.lit("line is not valid UTF-8"))
        .when((found < needed) | (found > width))
        .then(pl.format(f"expected {width} fields, found {{}}", found))
    )
    checked = lines.with_columns(reason=reason)
    good = checked.filter(pl.col("reason").is_null())
    fields = {
        name: parts.list.get(position, null_on_oob=True).str.strip_chars().str.strip_chars('"')
        for name, position in columns.items()
    }
    rows = good.with_columns(**fields)
    if VOLUME not in columns:
        rows = rows.with_columns(volume=pl.lit(None, dtype=pl.String))
    garbage = checked.filter(pl.col("reason").is_not_null()).select(
        "source", "location", "record", "reason"
    )
    return rows, garbage
