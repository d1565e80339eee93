"""Binance spot klines (GET /api/v3/klines, interval 1d) for crypto, paginated by startTime."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from typing import Any

import polars as pl

from pipelines.prices.sources.base import (
    RAW_BARS_SCHEMA,
    Answers,
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
MAX_PAGE_LIMIT = 1000
"""Binance answers at most this many klines a request, whatever `limit` asks for."""


def _ms(day: date) -> int:
    return int(datetime(day.year, day.month, day.day, tzinfo=UTC).timestamp() * 1000)


def utc_today() -> date:
    return datetime.now(UTC).date()


def checked_page_limit(page_limit: object) -> int:
    """`page_limit` if Binance can honour it (an integer 1..1000), else a `ValueError` naming it.

    A larger limit is silently capped by Binance, so it must be refused where it is configured.
    """
    if not isinstance(page_limit, int) or isinstance(page_limit, bool):
        raise ValueError(f"page_limit = {page_limit!r} is not an integer (1..{MAX_PAGE_LIMIT})")
    if not 1 <= page_limit <= MAX_PAGE_LIMIT:
        raise ValueError(
            f"page_limit = {page_limit} is outside 1..{MAX_PAGE_LIMIT}: Binance answers at most"
            f" {MAX_PAGE_LIMIT} klines a request"
        )
    return page_limit


@dataclass(frozen=True)
class KlinePage:
    """One answer of the klines endpoint: its rows and rejects, and the open times it holds."""

    bars: RawBars
    opened: list[int]
    """Open times (ms) of the klines that have one, whatever else is wrong with them."""


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
        page_limit: int = MAX_PAGE_LIMIT,
        http: HttpFetcher | None = None,
        today: Callable[[], date] = utc_today,
    ) -> None:
        super().__init__(listing, config_path, http)
        self.base_url, self.quote = base_url.rstrip("/"), quote
        self.start_date, self.page_limit = start_date, checked_page_limit(page_limit)
        self.today = today
        """The day of the newest kline (still open): paging ends on reaching it."""

    def daily_bars(self, market: str, symbols: Sequence[str], since: date | None) -> RawBars:
        pairs = self.remote_tickers()
        parts = [self._klines(s, pairs.get(s, f"{s}{self.quote}"), since) for s in symbols]
        return RawBars.concat(parts)

    def _klines(self, symbol: str, pair: str, since: date | None) -> RawBars:
        """Every page from `since` on, until a page reaches today's kline or is empty.

        The size of a page says nothing: Binance may answer fewer klines than `limit` asks for.
        """
        start, newest = _ms(since or self.start_date), _ms(self.today())
        pages: list[RawBars] = []
        while True:
            params: dict[str, str | int] = {
                "symbol": pair,
                "interval": "1d",
                "startTime": start,
                "limit": self.page_limit,
            }
            response = self.http.get(f"{self.base_url}/api/v3/klines", params)
            page = parse_klines(response.text, str(response.url), symbol)
            pages.append(page.bars)
            last = max(page.opened, default=None)
            # `last < start`: the server ignored startTime; asking again would loop forever.
            if last is None or last >= newest or last < start:
                break
            start = last + MS_PER_DAY
        return RawBars.concat(pages)


def parse_klines(text: str, source: str, symbol: str) -> KlinePage:
    """The klines of one answer as raw rows of `symbol`; anything unreadable is a reject."""
    answered = Answers(requests=1)
    try:
        page: Any = json.loads(text)
    except (ValueError, RecursionError):  # RecursionError: absurdly nested arrays
        return _unreadable_page(source, text, "response is not valid JSON")
    if not isinstance(page, list):
        return _unreadable_page(source, text, "response is not a JSON array of klines")
    rows: list[dict[str, str | None]] = []
    bad: list[dict[str, str]] = []
    for index, kline in enumerate(page):
        row, reason = parse_kline(kline)
        where = {"source": source, "location": f"$[{index}]", "record": _record(kline)}
        if reason:
            bad.append(where | {"reason": reason})
        else:
            rows.append(row | where | {"symbol": symbol})
    opened = [k[0] for k in page if isinstance(k, list) and k and _is_int(k[0])]
    bars = RawBars(pl.DataFrame(rows, schema=RAW_BARS_SCHEMA), unreadable(bad), answered)
    return KlinePage(bars, opened)


def parse_kline(kline: Any) -> tuple[dict[str, str | None], str | None]:
    """One kline as text fields, or the reason it cannot be read as a daily bar."""
    if not isinstance(kline, list) or len(kline) < 6:
        return {}, "kline is not an array of at least 6 fields"
    opened = kline[0]
    if not _is_int(opened):
        return {}, f"open time {_shown(opened)} is not an integer of milliseconds"
    if opened % MS_PER_DAY:
        return {}, f"open time {opened} is not 00:00 UTC"
    try:
        day = date(1970, 1, 1) + timedelta(days=opened // MS_PER_DAY)
    except OverflowError:
        return {}, f"open time {opened} is not a day between the years 1 and 9999"
    values = [None if v is None else _text(v) for v in kline[1:6]]
    return dict(zip(("open", "high", "low", "close", "volume"), values, strict=True)) | {
        "date": day.isoformat()
    }, None


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _text(value: object) -> str:
    """A field as text: JSON strings as they are, other JSON values as JSON (so a nested array
    reads as an array in the reject)."""
    return value if isinstance(value, str) else _record(value)


def _record(value: object) -> str:
    try:
        return json.dumps(value)
    except (RecursionError, ValueError):  # nested deeper than the encoder goes
        return "<value nested too deeply to show>"


def _shown(value: object) -> str:
    return _record(value)[:100]


def _unreadable_page(source: str, body: str, reason: str) -> KlinePage:
    bad = [{"source": source, "location": "body", "record": body[:500], "reason": reason}]
    answered = Answers(requests=1, unreadable=((source, body),))
    return KlinePage(RawBars(RAW_BARS_SCHEMA.to_frame(), unreadable(bad), answered), [])
