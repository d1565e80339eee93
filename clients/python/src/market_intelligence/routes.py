"""Every route of the API as a `Call`: its path, its query and the resource it answers.

The sync and the async client send the same calls; keeping them here means a route's path and
parameter names are written once.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from typing import Generic, TypeVar
from urllib.parse import quote

from market_intelligence.models import (
    Adjustment,
    BacktestSummary,
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
    TradeList,
    TrendHistory,
    TrendSegments,
    VersionList,
)

R = TypeVar("R", bound=Resource)
Query = dict[str, str | int | float]
Moment = int | date | datetime
"""A point in time: unix epoch milliseconds, a date (00:00 UTC) or an aware datetime."""

SYMBOLS_PAGE_MAX = 1000
"""list-symbols clamps `limit` to 1..1000 (decisions.md, Parameters)."""
TRADES_PAGE_MAX = 100
"""get-recent-buys and get-recent-sells clamp `limit` to 1..100."""


@dataclass(frozen=True)
class Call(Generic[R]):
    """One GET: the path under the base URL, the query (None values left out) and the answer type."""

    path: str
    answer: type[R]
    query: Query = field(default_factory=dict)
    public: bool = False
    """Answered without an API key (the status route); every other route needs one."""
    data: bool = True
    """A data route: it takes `as_of` and says which data version answered."""

    @property
    def key(self) -> str:
        """The request as the ETag cache knows it: path and query in a stable order."""
        pairs = "&".join(f"{name}={value}" for name, value in sorted(self.query.items()))
        return f"{self.path}?{pairs}"


def _path(*segments: str | int) -> str:
    """Segments joined as a path, each percent-encoded (a symbol or a search term may hold `/`)."""
    return "/".join(quote(str(segment), safe="") for segment in segments)


def _query(**values: str | int | float | None) -> Query:
    return {name: value for name, value in values.items() if value is not None}


def epoch_ms(moment: Moment | None) -> int | None:
    """`from`/`to` of get-price-history: milliseconds since the epoch, UTC."""
    if moment is None or isinstance(moment, int):
        return moment
    if not isinstance(moment, datetime):
        moment = datetime(moment.year, moment.month, moment.day, tzinfo=UTC)
    if moment.tzinfo is None:
        raise ValueError("a datetime for the API must be timezone-aware (the API runs in UTC)")
    return int(moment.timestamp() * 1000)


def market_route(market: Market, group: str, route: str, *rest: str | int) -> str:
    return "/api/v2/" + _path(market, group, route, *rest)


def crypto_route(group: str, route: str, *rest: str | int) -> str:
    return "/api/v2/crypto/" + _path(group, route, *rest)


# -- public


def ping() -> Call[Ping]:
    return Call("/api/v1/ping", Ping, data=False)


def status() -> Call[SystemStatus]:
    return Call("/api/v1/status", SystemStatus, public=True, data=False)


def list_versions(start: Moment | str | None, end: Moment | str | None, limit: int | None) -> Call[VersionList]:  # fmt: skip
    query = _query(**{"from": _instant(start), "to": _instant(end)}, limit=limit)
    return Call("/api/v1/versions", VersionList, query, data=False)


def as_of_value(moment: Moment | str) -> str:
    """`as_of` as the API takes it: a data version id (str, as `data_version` gives it) or an
    instant (an aware datetime, a date's 00:00 UTC, or epoch milliseconds) in RFC 3339."""
    if isinstance(moment, str):
        return moment
    return _instant(moment) or ""


def _instant(moment: Moment | str | None) -> str | None:
    if moment is None or isinstance(moment, str):
        return moment
    if isinstance(moment, datetime):
        if moment.tzinfo is None:
            raise ValueError("pass an aware datetime (an instant), not a naive one")
        return moment.astimezone(UTC).isoformat().replace("+00:00", "Z")
    if isinstance(moment, date):
        return f"{moment.isoformat()}T00:00:00Z"
    return datetime.fromtimestamp(moment / 1000, UTC).isoformat().replace("+00:00", "Z")


def data_status(market: Market, start: date | None, end: date | None) -> Call[DataStatus]:
    days = {"from": start.isoformat() if start else None, "to": end.isoformat() if end else None}
    return Call("/api/v2/" + _path(market, "data-status"), DataStatus, _query(**days))


# -- instruments


def get_corporate_actions(
    market: Market, symbol: str, start: date | None, end: date | None
) -> Call[CorporateActionList]:
    days = {"from": start.isoformat() if start else None, "to": end.isoformat() if end else None}
    path = market_route(market, "reference", "get-corporate-actions", symbol)
    return Call(path, CorporateActionList, _query(**days))


def _flag(value: bool | None) -> str | None:
    return None if value is None else str(value).lower()


def list_symbols(
    market: Market, limit: int | None, skip: int | None, include_delisted: bool | None = None
) -> Call[SymbolList]:
    path = market_route(market, "instruments", "list-symbols")
    query = _query(limit=limit, skip=skip, include_delisted=_flag(include_delisted))
    return Call(path, SymbolList, query)


def get_detail(market: Market, symbol: str) -> Call[Instrument]:
    return Call(market_route(market, "instruments", "get-detail", symbol), Instrument)


def search_instruments(
    market: Market, query: str, include_delisted: bool | None = None
) -> Call[InstrumentSearch]:
    path = market_route(market, "instruments", "search-instruments", query)
    return Call(path, InstrumentSearch, _query(include_delisted=_flag(include_delisted)))


def scorecard(market: Market, symbol: str) -> Call[Scorecard]:
    return Call(market_route(market, "instruments", "scorecard", symbol), Scorecard)


# -- newsroom and sentiment


def get_article(market: Market, article_id: str) -> Call[Brief]:
    return Call(market_route(market, "newsroom", "get-article", article_id), Brief)


def get_recent_briefs(market: Market, symbol: str, limit: int | None) -> Call[BriefList]:
    path = market_route(market, "newsroom", "get-recent-briefs", symbol)
    return Call(path, BriefList, _query(limit=limit))


def search_briefs(
    market: Market, symbol: str, keywords: str | None, limit: int | None
) -> Call[BriefList]:
    path = market_route(market, "newsroom", "search-briefs", symbol)
    return Call(path, BriefList, _query(keywords=keywords, limit=limit))


def get_sentiment_history(market: Market, symbol: str, limit: int | None) -> Call[SentimentHistory]:
    path = market_route(market, "sentiment", "get-sentiment-history", symbol)
    return Call(path, SentimentHistory, _query(limit=limit))


def get_instrument_analysis(symbol: str) -> Call[InstrumentAnalysis]:
    return Call(crypto_route("newsroom", "get-instrument-analysis", symbol), InstrumentAnalysis)


def get_market_summary() -> Call[MarketSummary]:
    return Call(crypto_route("newsroom", "get-market-summary"), MarketSummary)


# -- technical analysis


def get_indicators(market: Market, symbol: str, period: int | None) -> Call[Indicators]:
    path = market_route(market, "technical-analysis", "get-indicators", symbol)
    return Call(path, Indicators, _query(period=period))


def get_price_history(
    market: Market,
    symbol: str,
    limit: int | None,
    start: Moment | None,
    end: Moment | None,
    adjustment: Adjustment | None = None,
) -> Call[PriceHistory]:
    path = market_route(market, "technical-analysis", "get-price-history", symbol)
    window = {"from": epoch_ms(start), "to": epoch_ms(end)}
    query = _query(limit=limit, **window, adjustment=adjustment)
    return Call(path, PriceHistory, query)


# -- trades and trends


def get_current_trend(market: Market, symbol: str) -> Call[CurrentTrend]:
    return Call(market_route(market, "trades", "get-current-trend", symbol), CurrentTrend)


def get_trend_segments(market: Market, symbol: str, limit: int | None) -> Call[TrendSegments]:
    path = market_route(market, "trades", "get-trend-segments", symbol)
    return Call(path, TrendSegments, _query(limit=limit))


def get_trend_history(symbol: str, limit: int) -> Call[TrendHistory]:
    return Call(crypto_route("trades", "get-trend-history", symbol, limit), TrendHistory)


def get_backtest_history(
    symbol: str, strategy: Strategy, years: int | None, limit: int | None, fill: Fill | None
) -> Call[TradeList]:
    path = crypto_route("trades", "get-backtest-history", symbol, strategy)
    return Call(path, TradeList, _query(years=years, limit=limit, fill=fill))


def get_backtest_summary(
    symbol: str, strategy: Strategy, years: int | None, fill: Fill | None
) -> Call[BacktestSummary]:
    path = crypto_route("trades", "get-backtest-summary", symbol, strategy)
    return Call(path, BacktestSummary, _query(years=years, fill=fill))


def get_current_action(symbol: str, strategy: Strategy) -> Call[CurrentAction]:
    return Call(crypto_route("trades", "get-current-action", symbol, strategy), CurrentAction)


def recent_trades(
    side: str, strategy: Strategy | None, limit: int | None, skip: int | None
) -> Call[TradeList]:
    """get-recent-buys (`side` buys) or get-recent-sells (`side` sells)."""
    path = crypto_route("trades", f"get-recent-{side}")
    return Call(path, TradeList, _query(strategy=strategy, limit=limit, skip=skip))


def get_recommendations(
    strategy: Strategy | None, limit: int | None, min_score: float | None
) -> Call[RecommendationList]:
    path = crypto_route("trades", "get-recommendations")
    return Call(
        path, RecommendationList, _query(strategy=strategy, limit=limit, min_score=min_score)
    )


# -- legacy form


def legacy_trends(coin: str) -> Call[LegacyTrends]:
    return Call("/api/v2/market/trends/" + _path(coin), LegacyTrends)


def legacy_sentiment(coin: str, days: int) -> Call[LegacySentiment]:
    return Call("/api/v2/sentiment/sentiment/" + _path(coin, days), LegacySentiment)


# -- bulk export: files, not resources


@dataclass(frozen=True)
class Download:
    """One GET of a file: the path under the base URL and the query (None values left out)."""

    path: str
    query: Query = field(default_factory=dict)


def bulk_export(
    market: Market,
    dataset: Dataset,
    file_format: FileFormat | None,
    start: date | None,
    end: date | None,
    symbols: Iterable[str] | None,
    adjustment: Adjustment | None = None,
) -> Download:
    """`from` and `to` are days (inclusive); `symbols` goes comma-separated."""
    query = _query(
        format=file_format,
        **{"from": _day(start), "to": _day(end)},
        symbols=None if symbols is None else ",".join(symbols),
        adjustment=adjustment,
    )
    return Download(market_route(market, "bulk", dataset), query)


def _day(day: date | None) -> str | None:
    if isinstance(day, datetime):
        raise TypeError("bulk export filters by day: pass a date, not a datetime")
    return None if day is None else day.isoformat()
