"""The sync `Client` and the `AsyncClient`: one typed method per route of the API, on httpx."""

from __future__ import annotations

import copy
import os
from collections.abc import AsyncIterator, Iterable, Iterator
from datetime import date
from pathlib import Path
from types import TracebackType
from typing import Protocol, Self, TypeVar

import httpx
import stamina

from market_intelligence import routes
from market_intelligence._core import Core
from market_intelligence.models import (
    Adjustment,
    BacktestSummary,
    Balance,
    Brief,
    BriefList,
    CorporateActionList,
    CurrentAction,
    CurrentTrend,
    Dataset,
    DataStatus,
    FileFormat,
    Fill,
    Indicators,
    Instrument,
    InstrumentAnalysis,
    InstrumentSearch,
    LegacySentiment,
    LegacyTrends,
    Market,
    MarketSummary,
    Ping,
    PriceHistory,
    RecommendationList,
    Resource,
    Scorecard,
    SentimentHistory,
    Strategy,
    SymbolList,
    SystemStatus,
    Trade,
    TradeList,
    TrendHistory,
    TrendSegments,
    VersionList,
)
from market_intelligence.routes import SYMBOLS_PAGE_MAX, TRADES_PAGE_MAX, Call, Download, Moment

R = TypeVar("R", bound=Resource)

DEFAULT_TIMEOUT = 30.0
"""Seconds per request; the server gives up on a request after 120."""


def _part(target: Path) -> Path:
    """Where a download is written until complete (an interrupted one never has the final name)."""
    return target.with_name(target.name + ".part")


def _page_size(requested: int, most: int) -> int:
    """A page the server will not clamp: a clamped page would look like the last one."""
    if requested < 1:
        raise ValueError("page_size must be at least 1")
    return min(requested, most)


class _Settings:
    """The constructor both clients share, and what they expose of their state."""

    _core: Core
    _owns_http: bool

    def _configure(
        self,
        api_key: str | None,
        base_url: str | None,
        retry_attempts: int,
        max_retry_wait: float,
        cache_size: int,
    ) -> None:
        self._core = Core(api_key, base_url, retry_attempts, max_retry_wait, cache_size)

    @property
    def base_url(self) -> str:
        return self._core.base_url

    @property
    def balance(self) -> Balance | None:
        """The balance headers of the last metered response (None before the first one)."""
        return self._core.balance

    @property
    def revalidated(self) -> bool:
        """Whether the last answer was a 304: the cached body was still current."""
        return self._core.revalidated

    @property
    def data_version(self) -> str | None:
        """The data version that gave the last data answer (`x-data-version`): pass it to `at`
        to have the same answers again."""
        return self._core.data_version

    @property
    def data_published(self) -> str | None:
        """When that version was published, RFC 3339 UTC (`x-data-published`)."""
        return self._core.data_published

    @property
    def as_of(self) -> str | None:
        """What this client's data requests are answered as of (`at`), None: now."""
        return self._core.as_of

    def at(self, as_of: Moment | str) -> Self:
        """This client answering every data route as the API did then: `as_of` is a data
        version id (`data_version`) or an instant (an aware datetime, a date's 00:00 UTC, or
        epoch ms). It shares the connection and key, with a cache and state of its own; closing
        it leaves this client open. The same request gives the same body and ETag as then."""
        past = copy.copy(self)
        past._core = self._core.at(routes.as_of_value(as_of))
        past._owns_http = False
        return past


class Client(_Settings):
    """The Market Intelligence API, one blocking call per route.

    `api_key` defaults to the environment variable MI_API_KEY, `base_url` to MI_API_URL (else
    http://127.0.0.1:8000). A 429 or 503 is retried after the server's `Retry-After`, up to
    `retry_attempts` tries in all, unless it asks for more than `max_retry_wait` seconds. The last
    `cache_size` bodies are kept with their ETags and revalidated with `If-None-Match` (0: off).
    Pass `http` to use your own `httpx.Client` (proxies, TLS, transports); it is not closed here.
    """

    def __init__(
        self,
        api_key: str | None = None,
        *,
        base_url: str | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        retry_attempts: int = 3,
        max_retry_wait: float = 60.0,
        cache_size: int = 256,
        http: httpx.Client | None = None,
    ) -> None:
        self._configure(api_key, base_url, retry_attempts, max_retry_wait, cache_size)
        self._owns_http = http is None
        self._http = http if http is not None else httpx.Client(timeout=timeout)

    def close(self) -> None:
        if self._owns_http:
            self._http.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self.close()

    def _send(self, call: Call[R]) -> R:
        core = self._core
        retrying = stamina.retry_context(
            on=core.backoff, attempts=core.retry_attempts, timeout=None
        )
        for attempt in retrying:
            with attempt:
                headers = core.headers(call)
                try:
                    response = self._http.get(
                        core.url(call), params=core.params(call), headers=headers
                    )
                except httpx.TransportError as failure:
                    raise core.unreachable(failure) from failure
                return core.outcome(call, response)
        raise AssertionError("unreachable: stamina re-raises the last failure")

    def iter_symbols(
        self,
        market: Market,
        *,
        page_size: int = SYMBOLS_PAGE_MAX,
        include_delisted: bool | None = None,
    ) -> Iterator[str]:
        """Every symbol of the market, a page of list-symbols at a time."""
        size, skip = _page_size(page_size, SYMBOLS_PAGE_MAX), 0
        while True:
            call = routes.list_symbols(market, size, skip, include_delisted)
            page = self._send(call).symbols
            yield from page
            if len(page) < size:
                return
            skip += size

    def iter_recent_buys(
        self, *, strategy: Strategy | None = None, page_size: int = TRADES_PAGE_MAX
    ) -> Iterator[Trade]:
        """Every entry, newest first, a page of get-recent-buys at a time."""
        return self._iter_trades(self.get_recent_buys, strategy, page_size)

    def iter_recent_sells(
        self, *, strategy: Strategy | None = None, page_size: int = TRADES_PAGE_MAX
    ) -> Iterator[Trade]:
        """Every exit, newest first, a page of get-recent-sells at a time."""
        return self._iter_trades(self.get_recent_sells, strategy, page_size)

    def _iter_trades(
        self, fetch: _FetchTrades, strategy: Strategy | None, page_size: int
    ) -> Iterator[Trade]:
        size, skip = _page_size(page_size, TRADES_PAGE_MAX), 0
        while True:
            page = fetch(strategy=strategy, limit=size, skip=skip).trades
            yield from page
            if len(page) < size:
                return
            skip += size

    def ping(self) -> Ping:
        """Liveness; with a key it is metered and refreshes `balance`."""
        return self._send(routes.ping())

    def status(self) -> SystemStatus:
        """Service status with one check per datastore (public, never metered)."""
        return self._send(routes.status())

    def list_versions(
        self,
        *,
        start: Moment | str | None = None,
        end: Moment | str | None = None,
        limit: int | None = None,
    ) -> VersionList:
        """The retained data versions, newest first, published from `start` to `end` (limit
        1..500, default 50); free with a key. Each `version` is a value for `at`."""
        return self._send(routes.list_versions(start, end, limit))

    def data_status(
        self, market: Market, *, start: date | None = None, end: date | None = None
    ) -> DataStatus:
        """Each day of the market's calendar from `start` to `end` (default the last 30 days, at
        most 366), newest first: available, degraded, pending or missing, with the failed
        checks; free with a key."""
        return self._send(routes.data_status(market, start, end))

    def list_symbols(
        self,
        market: Market,
        *,
        limit: int | None = None,
        skip: int | None = None,
        include_delisted: bool | None = None,
    ) -> SymbolList:
        """One page of a market's symbols listed today (limit 1..1000, default 100); with
        `include_delisted`, the delisted ones too."""
        return self._send(routes.list_symbols(market, limit, skip, include_delisted))

    def get_corporate_actions(
        self, market: Market, symbol: str, *, start: date | None = None, end: date | None = None
    ) -> CorporateActionList:
        """An instrument's splits, dividends, listing and delisting from `start` to `end`
        (default all), oldest first."""
        return self._send(routes.get_corporate_actions(market, symbol, start, end))

    def get_detail(self, market: Market, symbol: str) -> Instrument:
        """An instrument's name and logo (crypto only)."""
        return self._send(routes.get_detail(market, symbol))

    def search_instruments(
        self, market: Market, query: str, *, include_delisted: bool | None = None
    ) -> InstrumentSearch:
        """At most 5 instruments listed today matching `query` by symbol or name (crypto only);
        with `include_delisted`, among the delisted ones too."""
        return self._send(routes.search_instruments(market, query, include_delisted))

    def scorecard(self, market: Market, symbol: str) -> Scorecard:
        """The instrument's technical scorecard."""
        return self._send(routes.scorecard(market, symbol))

    def get_article(self, market: Market, article_id: str) -> Brief:
        """One brief by its article id."""
        return self._send(routes.get_article(market, article_id))

    def get_recent_briefs(
        self, market: Market, symbol: str, *, limit: int | None = None
    ) -> BriefList:
        """The symbol's newest briefs (limit default 10)."""
        return self._send(routes.get_recent_briefs(market, symbol, limit))

    def search_briefs(
        self, market: Market, symbol: str, *, keywords: str | None = None, limit: int | None = None
    ) -> BriefList:
        """Briefs of the past 24 hours whose titles hold every keyword (limit default 20)."""
        return self._send(routes.search_briefs(market, symbol, keywords, limit))

    def get_sentiment_history(
        self, market: Market, symbol: str, *, limit: int | None = None
    ) -> SentimentHistory:
        """Daily brief counts by sentiment, newest first (limit default 30 days)."""
        return self._send(routes.get_sentiment_history(market, symbol, limit))

    def get_instrument_analysis(self, symbol: str) -> InstrumentAnalysis:
        """The newest written analysis of a coin (crypto)."""
        return self._send(routes.get_instrument_analysis(symbol))

    def get_market_summary(self) -> MarketSummary:
        """Today's written summary of the crypto market."""
        return self._send(routes.get_market_summary())

    def get_indicators(
        self, market: Market, symbol: str, *, period: int | None = None
    ) -> Indicators:
        """Technical indicators over `period` days (default 30, clamped to 2..365)."""
        return self._send(routes.get_indicators(market, symbol, period))

    def get_price_history(
        self,
        market: Market,
        symbol: str,
        *,
        limit: int | None = None,
        start: Moment | None = None,
        end: Moment | None = None,
        adjustment: Adjustment | None = None,
    ) -> PriceHistory:
        """Daily prices, oldest first: all of them, or `start`..`end` (the API's `from`/`to`, inclusive), capped to the newest `limit`; `adjustment` split (the API's default), all (total return) or raw (as traded)."""
        call = routes.get_price_history(market, symbol, limit, start, end, adjustment)
        return self._send(call)

    def get_current_trend(self, market: Market, symbol: str) -> CurrentTrend:
        """The running trend (forex, commodities, stocks)."""
        return self._send(routes.get_current_trend(market, symbol))

    def get_trend_segments(
        self, market: Market, symbol: str, *, limit: int | None = None
    ) -> TrendSegments:
        """Trend episodes, newest first (forex, commodities, stocks; limit default 50)."""
        return self._send(routes.get_trend_segments(market, symbol, limit))

    def get_trend_history(self, symbol: str, limit: int) -> TrendHistory:
        """A coin's daily trend points, newest first (crypto)."""
        return self._send(routes.get_trend_history(symbol, limit))

    def get_backtest_history(
        self,
        symbol: str,
        strategy: Strategy,
        *,
        years: int | None = None,
        limit: int | None = None,
        fill: Fill | None = None,
    ) -> TradeList:
        """A strategy's simulated trades over `years` (default 2), newest first (crypto); `fill`
        "next_open" fills at the next bar's open (default "close": the signal bar's close)."""
        return self._send(routes.get_backtest_history(symbol, strategy, years, limit, fill))

    def get_backtest_summary(
        self, symbol: str, strategy: Strategy, *, years: int | None = None, fill: Fill | None = None
    ) -> BacktestSummary:
        """A strategy's backtest metrics over `years` (default 2) (crypto), filled at `fill`."""
        return self._send(routes.get_backtest_summary(symbol, strategy, years, fill))

    def get_current_action(self, symbol: str, strategy: Strategy) -> CurrentAction:
        """What the strategy does on the latest bar: Buy, Sell, Hold or Stay (crypto)."""
        return self._send(routes.get_current_action(symbol, strategy))

    def get_recent_buys(
        self, *, strategy: Strategy | None = None, limit: int | None = None, skip: int | None = None
    ) -> TradeList:
        """One page of the newest entries of both strategies, or of one (crypto; limit 1..100, default 10)."""
        return self._send(routes.recent_trades("buys", strategy, limit, skip))

    def get_recent_sells(
        self, *, strategy: Strategy | None = None, limit: int | None = None, skip: int | None = None
    ) -> TradeList:
        """One page of the newest exits of both strategies, or of one (crypto; limit 1..100, default 10)."""
        return self._send(routes.recent_trades("sells", strategy, limit, skip))

    def get_recommendations(
        self,
        *,
        strategy: Strategy | None = None,
        limit: int | None = None,
        min_score: float | None = None,
    ) -> RecommendationList:
        """Coins whose score is at least `min_score` (default 3.5), best first (crypto)."""
        return self._send(routes.get_recommendations(strategy, limit, min_score))

    def legacy_trends(self, coin: str) -> LegacyTrends:
        """Legacy form: a coin's trend episodes under `Success`."""
        return self._send(routes.legacy_trends(coin))

    def legacy_sentiment(self, coin: str, days: int) -> LegacySentiment:
        """Legacy form: a coin's sentiment by topic over `days` days under `Success`."""
        return self._send(routes.legacy_sentiment(coin, days))

    def bulk_export(
        self,
        market: Market,
        dataset: Dataset,
        destination: str | os.PathLike[str],
        *,
        format: FileFormat | None = None,
        start: date | None = None,
        end: date | None = None,
        symbols: Iterable[str] | None = None,
        adjustment: Adjustment | None = None,
    ) -> Path:
        """Stream a whole dataset of one market (the current data version) into a file.

        `destination` is a file path, or a directory to save under the server's file name
        (`<market>-<dataset>-<version>.<ext>`); returns the path written. The body is written as
        it arrives, never held in memory, into a `.part` file renamed once complete. `format`:
        parquet (default), arrow (IPC stream) or csv; `start`/`end` keep the days between them
        (inclusive), `symbols` the named symbols; `adjustment` (daily-prices only) split (the
        API's default), all or raw. Costs 1 token per 1,000 rows, at least 10; not on the sandbox
        plan (`PaymentRequired`).
        """
        download = routes.bulk_export(market, dataset, format, start, end, symbols, adjustment)
        core = self._core
        retrying = stamina.retry_context(
            on=core.backoff, attempts=core.retry_attempts, timeout=None
        )
        for attempt in retrying:
            with attempt:
                return self._download(download, destination)
        raise AssertionError("unreachable: stamina re-raises the last failure")

    def _download(self, download: Download, destination: str | os.PathLike[str]) -> Path:
        core = self._core
        url, headers = core.file_url(download), core.file_headers()
        try:
            with self._http.stream(
                "GET", url, params=core.file_params(download), headers=headers
            ) as answer:
                if answer.status_code != httpx.codes.OK:
                    answer.read()
                target = core.file_target(answer, destination)
                with _part(target).open("wb") as out:
                    for chunk in answer.iter_bytes():
                        out.write(chunk)
        except httpx.TransportError as failure:
            raise core.unreachable(failure) from failure
        return _part(target).replace(target)


class AsyncClient(_Settings):
    """As `Client`, with coroutines; pass `http` to use your own `httpx.AsyncClient`."""

    def __init__(
        self,
        api_key: str | None = None,
        *,
        base_url: str | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        retry_attempts: int = 3,
        max_retry_wait: float = 60.0,
        cache_size: int = 256,
        http: httpx.AsyncClient | None = None,
    ) -> None:
        self._configure(api_key, base_url, retry_attempts, max_retry_wait, cache_size)
        self._owns_http = http is None
        self._http = http if http is not None else httpx.AsyncClient(timeout=timeout)

    async def aclose(self) -> None:
        if self._owns_http:
            await self._http.aclose()

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        await self.aclose()

    async def _send(self, call: Call[R]) -> R:
        core = self._core
        retrying = stamina.retry_context(
            on=core.backoff, attempts=core.retry_attempts, timeout=None
        )
        async for attempt in retrying:
            with attempt:
                headers = core.headers(call)
                try:
                    response = await self._http.get(
                        core.url(call), params=core.params(call), headers=headers
                    )
                except httpx.TransportError as failure:
                    raise core.unreachable(failure) from failure
                return core.outcome(call, response)
        raise AssertionError("unreachable: stamina re-raises the last failure")

    async def iter_symbols(
        self,
        market: Market,
        *,
        page_size: int = SYMBOLS_PAGE_MAX,
        include_delisted: bool | None = None,
    ) -> AsyncIterator[str]:
        """Every symbol of the market, a page of list-symbols at a time."""
        size, skip = _page_size(page_size, SYMBOLS_PAGE_MAX), 0
        while True:
            call = routes.list_symbols(market, size, skip, include_delisted)
            page = (await self._send(call)).symbols
            for symbol in page:
                yield symbol
            if len(page) < size:
                return
            skip += size

    def iter_recent_buys(
        self, *, strategy: Strategy | None = None, page_size: int = TRADES_PAGE_MAX
    ) -> AsyncIterator[Trade]:
        """Every entry, newest first, a page of get-recent-buys at a time."""
        return self._iter_trades(self.get_recent_buys, strategy, page_size)

    def iter_recent_sells(
        self, *, strategy: Strategy | None = None, page_size: int = TRADES_PAGE_MAX
    ) -> AsyncIterator[Trade]:
        """Every exit, newest first, a page of get-recent-sells at a time."""
        return self._iter_trades(self.get_recent_sells, strategy, page_size)

    async def _iter_trades(
        self, fetch: _AsyncFetchTrades, strategy: Strategy | None, page_size: int
    ) -> AsyncIterator[Trade]:
        size, skip = _page_size(page_size, TRADES_PAGE_MAX), 0
        while True:
            page = (await fetch(strategy=strategy, limit=size, skip=skip)).trades
            for trade in page:
                yield trade
            if len(page) < size:
                return
            skip += size

    async def ping(self) -> Ping:
        """Liveness; with a key it is metered and refreshes `balance`."""
        return await self._send(routes.ping())

    async def status(self) -> SystemStatus:
        """Service status with one check per datastore (public, never metered)."""
        return await self._send(routes.status())

    async def list_versions(
        self,
        *,
        start: Moment | str | None = None,
        end: Moment | str | None = None,
        limit: int | None = None,
    ) -> VersionList:
        """The retained data versions, newest first, published from `start` to `end` (limit
        1..500, default 50); free with a key. Each `version` is a value for `at`."""
        return await self._send(routes.list_versions(start, end, limit))

    async def data_status(
        self, market: Market, *, start: date | None = None, end: date | None = None
    ) -> DataStatus:
        """Each day of the market's calendar from `start` to `end` (default the last 30 days, at
        most 366), newest first: available, degraded, pending or missing, with the failed
        checks; free with a key."""
        return await self._send(routes.data_status(market, start, end))

    async def list_symbols(
        self,
        market: Market,
        *,
        limit: int | None = None,
        skip: int | None = None,
        include_delisted: bool | None = None,
    ) -> SymbolList:
        """One page of a market's symbols listed today (limit 1..1000, default 100); with
        `include_delisted`, the delisted ones too."""
        return await self._send(routes.list_symbols(market, limit, skip, include_delisted))

    async def get_corporate_actions(
        self, market: Market, symbol: str, *, start: date | None = None, end: date | None = None
    ) -> CorporateActionList:
        """An instrument's splits, dividends, listing and delisting from `start` to `end`
        (default all), oldest first."""
        return await self._send(routes.get_corporate_actions(market, symbol, start, end))

    async def get_detail(self, market: Market, symbol: str) -> Instrument:
        """An instrument's name and logo (crypto only)."""
        return await self._send(routes.get_detail(market, symbol))

    async def search_instruments(
        self, market: Market, query: str, *, include_delisted: bool | None = None
    ) -> InstrumentSearch:
        """At most 5 instruments listed today matching `query` by symbol or name (crypto only);
        with `include_delisted`, among the delisted ones too."""
        return await self._send(routes.search_instruments(market, query, include_delisted))

    async def scorecard(self, market: Market, symbol: str) -> Scorecard:
        """The instrument's technical scorecard."""
        return await self._send(routes.scorecard(market, symbol))

    async def get_article(self, market: Market, article_id: str) -> Brief:
        """One brief by its article id."""
        return await self._send(routes.get_article(market, article_id))

    async def get_recent_briefs(
        self, market: Market, symbol: str, *, limit: int | None = None
    ) -> BriefList:
        """The symbol's newest briefs (limit default 10)."""
        return await self._send(routes.get_recent_briefs(market, symbol, limit))

    async def search_briefs(
        self, market: Market, symbol: str, *, keywords: str | None = None, limit: int | None = None
    ) -> BriefList:
        """Briefs of the past 24 hours whose titles hold every keyword (limit default 20)."""
        return await self._send(routes.search_briefs(market, symbol, keywords, limit))

    async def get_sentiment_history(
        self, market: Market, symbol: str, *, limit: int | None = None
    ) -> SentimentHistory:
        """Daily brief counts by sentiment, newest first (limit default 30 days)."""
        return await self._send(routes.get_sentiment_history(market, symbol, limit))

    async def get_instrument_analysis(self, symbol: str) -> InstrumentAnalysis:
        """The newest written analysis of a coin (crypto)."""
        return await self._send(routes.get_instrument_analysis(symbol))

    async def get_market_summary(self) -> MarketSummary:
        """Today's written summary of the crypto market."""
        return await self._send(routes.get_market_summary())

    async def get_indicators(
        self, market: Market, symbol: str, *, period: int | None = None
    ) -> Indicators:
        """Technical indicators over `period` days (default 30, clamped to 2..365)."""
        return await self._send(routes.get_indicators(market, symbol, period))

    async def get_price_history(
        self,
        market: Market,
        symbol: str,
        *,
        limit: int | None = None,
        start: Moment | None = None,
        end: Moment | None = None,
        adjustment: Adjustment | None = None,
    ) -> PriceHistory:
        """Daily prices, oldest first: all of them, or `start`..`end` (the API's `from`/`to`, inclusive), capped to the newest `limit`; `adjustment` split (the API's default), all (total return) or raw (as traded)."""
        call = routes.get_price_history(market, symbol, limit, start, end, adjustment)
        return await self._send(call)

    async def get_current_trend(self, market: Market, symbol: str) -> CurrentTrend:
        """The running trend (forex, commodities, stocks)."""
        return await self._send(routes.get_current_trend(market, symbol))

    async def get_trend_segments(
        self, market: Market, symbol: str, *, limit: int | None = None
    ) -> TrendSegments:
        """Trend episodes, newest first (forex, commodities, stocks; limit default 50)."""
        return await self._send(routes.get_trend_segments(market, symbol, limit))

    async def get_trend_history(self, symbol: str, limit: int) -> TrendHistory:
        """A coin's daily trend points, newest first (crypto)."""
        return await self._send(routes.get_trend_history(symbol, limit))

    async def get_backtest_history(
        self,
        symbol: str,
        strategy: Strategy,
        *,
        years: int | None = None,
        limit: int | None = None,
        fill: Fill | None = None,
    ) -> TradeList:
        """A strategy's simulated trades over `years` (default 2), newest first (crypto)."""
        return await self._send(routes.get_backtest_history(symbol, strategy, years, limit, fill))

    async def get_backtest_summary(
        self, symbol: str, strategy: Strategy, *, years: int | None = None, fill: Fill | None = None
    ) -> BacktestSummary:
        """A strategy's backtest metrics over `years` (default 2) (crypto), filled at `fill`."""
        return await self._send(routes.get_backtest_summary(symbol, strategy, years, fill))

    async def get_current_action(self, symbol: str, strategy: Strategy) -> CurrentAction:
        """What the strategy does on the latest bar: Buy, Sell, Hold or Stay (crypto)."""
        return await self._send(routes.get_current_action(symbol, strategy))

    async def get_recent_buys(
        self, *, strategy: Strategy | None = None, limit: int | None = None, skip: int | None = None
    ) -> TradeList:
        """One page of the newest entries of both strategies, or of one (crypto; limit 1..100, default 10)."""
        return await self._send(routes.recent_trades("buys", strategy, limit, skip))

    async def get_recent_sells(
        self, *, strategy: Strategy | None = None, limit: int | None = None, skip: int | None = None
    ) -> TradeList:
        """One page of the newest exits of both strategies, or of one (crypto; limit 1..100, default 10)."""
        return await self._send(routes.recent_trades("sells", strategy, limit, skip))

    async def get_recommendations(
        self,
        *,
        strategy: Strategy | None = None,
        limit: int | None = None,
        min_score: float | None = None,
    ) -> RecommendationList:
        """Coins whose score is at least `min_score` (default 3.5), best first (crypto)."""
        return await self._send(routes.get_recommendations(strategy, limit, min_score))

    async def legacy_trends(self, coin: str) -> LegacyTrends:
        """Legacy form: a coin's trend episodes under `Success`."""
        return await self._send(routes.legacy_trends(coin))

    async def legacy_sentiment(self, coin: str, days: int) -> LegacySentiment:
        """Legacy form: a coin's sentiment by topic over `days` days under `Success`."""
        return await self._send(routes.legacy_sentiment(coin, days))

    async def bulk_export(
        self,
        market: Market,
        dataset: Dataset,
        destination: str | os.PathLike[str],
        *,
        format: FileFormat | None = None,
        start: date | None = None,
        end: date | None = None,
        symbols: Iterable[str] | None = None,
        adjustment: Adjustment | None = None,
    ) -> Path:
        """`Client.bulk_export` as a coroutine."""
        download = routes.bulk_export(market, dataset, format, start, end, symbols, adjustment)
        core = self._core
        retrying = stamina.retry_context(
            on=core.backoff, attempts=core.retry_attempts, timeout=None
        )
        async for attempt in retrying:
            with attempt:
                return await self._download(download, destination)
        raise AssertionError("unreachable: stamina re-raises the last failure")

    async def _download(self, download: Download, destination: str | os.PathLike[str]) -> Path:
        core = self._core
        url, headers = core.file_url(download), core.file_headers()
        try:
            async with self._http.stream(
                "GET", url, params=core.file_params(download), headers=headers
            ) as answer:
                if answer.status_code != httpx.codes.OK:
                    await answer.aread()
                target = core.file_target(answer, destination)
                with _part(target).open("wb") as out:  # local disk: small blocking writes
                    async for chunk in answer.aiter_bytes():
                        out.write(chunk)
        except httpx.TransportError as failure:
            raise core.unreachable(failure) from failure
        return _part(target).replace(target)


class _FetchTrades(Protocol):
    def __call__(
        self, *, strategy: Strategy | None, limit: int | None, skip: int | None
    ) -> TradeList: ...


class _AsyncFetchTrades(Protocol):
    async def __call__(
        self, *, strategy: Strategy | None, limit: int | None, skip: int | None
    ) -> TradeList: ...
