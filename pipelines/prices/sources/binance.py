"""Binance spot klines (GET /api/v3/klines, interval 1d) for crypto, paginated by startTime."""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import UTC, date, datetime, timedelta
from typing import Any

import polars as pl

from pipelines.prices.sources.base import (
    RAW_BARS_SCHEMA,
    RawBars,
    unreadable,
)
from pipelines.prices.sources.http import (
    HttpFetcher,
    ListedHttpSource,
    ListedInstrument,
)

MS_PER_DAY = 86_400_000
KLINE_FIELDS = 12
"""open time, open, high, low, close, volume, close time, quote volume, trades, taker base, taker quote, ignore."""


def _ms(day: date) -> int:
    return int(datetime(day.year, day.month, day.day, tzinfo=UTC).timestamp() * 1000)


class BinanceSource(ListedHttpSource):
    """Daily klines of `<SYMBOL><quote>` pairs (or the configured `remote` pair) from Binance.

    Prices and volume arrive as JSON strings and are kept as text; volume is in the base asset.
    """

    name = "binance"

    def __init__(
        self,
        listing: Sequence[ListedInstrument],
        config_path: str,
        base_url: str = "https://api.binance.com",
        quote: str = "USDT",
        start_date: date = date(2017, 1, 1),
        page_limit: int = 1000,
        http: HttpFetcher | None = None,
    ) -> None:
        super().__init__(listing, config_path, http)
        self.base_url, self.quote = base_url.rstrip("/"), quote
        self.start_date, self.page_limit = start_date, page_limit

    def daily_bars(self, market: str, symbols: Sequence[str], since: date | None) -> RawBars:
        pairs = self.remote_tickers()
        parts = [self._klines(s, pairs.get(s, f"{s}{self.quote}"), since) for s in symbols]
        return RawBars.concat(parts)

    def _klines(self, symbol: str, pair: str, since: date | None) -> RawBars:
        """Every page from `since` on: a short page is the last one."""
        start = _ms(since or self.start_date)
        rows: list[dict[str, str | None]] = []
        bad: list[dict[str, str]] = []
        while True:
            params: dict[str, str | int] = {
                "symbol": pair,
                "interval": "1d",
                "startTime": start,
                "limit": self.page_limit,
            }
            response = self.http.get(f"{self.base_url}/api/v3/klines", params)
            url = str(response.url)
            try:
                page: Any = json.loads(response.text)
            except ValueError:
                bad.append(_whole(url, response.text, "response is not valid JSON"))
                break
            if not isinstance(page, list):
                bad.append(_whole(url, response.text, "response is not a JSON array of klines"))
                break
            for index, kline in enumerate(page):
                row, reason = parse_kline(kline)
                where = {"source": url, "location": f"$[{index}]", "record": json.dumps(kline)}
                if reason:
                    bad.append(where | {"reason": reason})
                else:
                    rows.append(row | where | {"symbol": symbol})
            opened = [k[0] for k in page if isinstance(k, list) and k and isinstance(k[0], int)]
            if len(page) < self.page_limit or not opened or max(opened) < start:
                break
            start = max(opened) + MS_PER_DAY
        return RawBars(pl.DataFrame(rows, schema=RAW_BARS_SCHEMA), unreadable(bad))


def parse_kline(kline: Any) -> tuple[dict[str, str | None], str | None]:
    """One kline as text fields, or the reason it cannot be read as a daily bar."""
    if not isinstance(kline, list) or len(kline) < 6:
        return {}, "kline is not an array of at least 6 fields"
    opened = kline[0]
    if not isinstance(opened, int) or isinstance(opened, bool):
        return {}, f"open time {opened!r} is not an integer of milliseconds"
    if opened % MS_PER_DAY:
        return {}, f"open time {opened} is not 00:00 UTC"
    day = date(1970, 1, 1) + timedelta(days=opened // MS_PER_DAY)
    values = [None if v is None else str(v) for v in kline[1:6]]
    return dict(zip(("open", "high", "low", "close", "volume"), values, strict=True)) | {
        "date": day.isoformat()
    }, None


def _whole(url: str, body: str, reason: str) -> dict[str, str]:
    return {"source": url, "location": "body", "record": body[:500], "reason": reason}
