"""Stooq end-of-day CSV (GET /q/d/l/?s=<ticker>&i=d) for stocks and commodities."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, date, datetime

import polars as pl

from pipelines.prices.sources.base import (
    RAW_BARS_SCHEMA,
    RawBars,
    SourceError,
    unreadable,
)
from pipelines.prices.sources.file_drop import split_csv_lines
from pipelines.prices.sources.http import (
    HttpFetcher,
    ListedHttpSource,
    ListedInstrument,
)

HEADER = ("date", "open", "high", "low", "close", "volume")
QUOTA_EXCEEDED = "Exceeded the daily hits limit"
NO_DATA = "No data"


class StooqSource(ListedHttpSource):
    """One CSV per ticker: `Date,Open,High,Low,Close,Volume` (Volume absent for some series).

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
    """Rows of one Stooq CSV body; 'No data' and a foreign header are rejects, the quota an error."""
    body = text.removeprefix("\ufeff")
    if body.startswith(QUOTA_EXCEEDED):
        raise SourceError(f"GET {source}: Stooq refused the request: {body.strip()[:200]}")
    lines = [line.rstrip("\r") for line in body.split("\n")]
    header = tuple(f.strip().lower() for f in lines[0].split(","))
    if header not in (HEADER, HEADER[:5]):
        reason = (
            f"no data for {symbol}"
            if body.strip() == NO_DATA
            else "response is not Date,Open,High,Low,Close[,Volume] CSV"
        )
        bad = [{"source": source, "location": "body", "record": body[:500], "reason": reason}]
        return RawBars(RAW_BARS_SCHEMA.to_frame(), unreadable(bad))
    frame = pl.DataFrame({"record": lines[1:]}).with_columns(
        source=pl.lit(source),
        symbol=pl.lit(symbol),
        location=pl.format("line {}", pl.int_range(2, len(lines) + 1)),
    )
    frame = frame.filter(pl.col("record").str.strip_chars() != "")
    rows, garbage = split_csv_lines(frame, header)
    if len(header) == 5:
        rows = rows.with_columns(volume=pl.lit(None, dtype=pl.String))
    return RawBars(rows.select(RAW_BARS_SCHEMA.names()), garbage)
