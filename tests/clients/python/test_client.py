"""The SDK against a real `mi serve` on the embedded market: every route, balance, ETags, pages, frames."""

from __future__ import annotations

import asyncio
import re
from datetime import UTC, datetime
from itertools import islice
from pathlib import Path
from typing import Any

import duckdb
import httpx
import msgspec
import polars as pl
import pytest
from market_intelligence import (
    AsyncClient,
    BacktestSummary,
    Brief,
    BriefList,
    Client,
    CorporateActionList,
    CurrentAction,
    CurrentTrend,
    DataStatus,
    Indicators,
    Instrument,
    InstrumentAnalysis,
    InstrumentSearch,
    LegacySentiment,
    LegacyTrends,
    MarketSummary,
    Ping,
    PriceHistory,
    RecommendationList,
    Resource,
    Scorecard,
    SentimentHistory,
    SymbolList,
    SystemStatus,
    TradeList,
    TrendHistory,
    TrendSegments,
    VersionList,
)

from pipelines.catalog import read_manifest
from tests.served import ServedApi

from .conftest import Recorder, async_client

pytestmark = pytest.mark.slow

ARTICLE = "<article>"
"""Placeholder for an article id, taken from get-recent-briefs first."""

ROUTES: list[tuple[str, str, tuple[Any, ...], dict[str, Any], type[Resource]]] = [
    ("/api/v1/ping", "ping", (), {}, Ping),
    ("/api/v1/status", "status", (), {}, SystemStatus),
    ("/api/v1/versions", "list_versions", (), {"limit": 2}, VersionList),
    ("/api/v2/{market}/data-status", "data_status", ("stocks",), {}, DataStatus),
    ("/api/v2/{market}/instruments/list-symbols", "list_symbols", ("stocks",), {"limit": 2}, SymbolList),
    ("/api/v2/{market}/instruments/get-detail/{symbol}", "get_detail", ("crypto", "eth"), {}, Instrument),
    ("/api/v2/{market}/reference/get-corporate-actions/{symbol}", "get_corporate_actions", ("stocks", "AAPL"), {}, CorporateActionList),
    ("/api/v2/{market}/instruments/search-instruments/{term}", "search_instruments", ("crypto", "bit"), {}, InstrumentSearch),
    ("/api/v2/{market}/instruments/scorecard/{symbol}", "scorecard", ("stocks", "AAPL"), {}, Scorecard),
    ("/api/v2/{market}/newsroom/get-article/{article_id}", "get_article", ("crypto", ARTICLE), {}, Brief),
    ("/api/v2/{market}/newsroom/get-recent-briefs/{symbol}", "get_recent_briefs", ("crypto", "BTC"), {"limit": 3}, BriefList),
    ("/api/v2/{market}/newsroom/search-briefs/{symbol}", "search_briefs", ("crypto", "BTC"), {"keywords": "bitcoin", "limit": 5}, BriefList),
    ("/api/v2/crypto/newsroom/get-instrument-analysis/{symbol}", "get_instrument_analysis", ("BTC",), {}, InstrumentAnalysis),
    ("/api/v2/crypto/newsroom/get-market-summary", "get_market_summary", (), {}, MarketSummary),
    ("/api/v2/{market}/sentiment/get-sentiment-history/{symbol}", "get_sentiment_history", ("crypto", "BTC"), {"limit": 5}, SentimentHistory),
    ("/api/v2/{market}/technical-analysis/get-indicators/{symbol}", "get_indicators", ("forex", "EURUSD"), {"period": 14}, Indicators),
    ("/api/v2/{market}/technical-analysis/get-price-history/{symbol}", "get_price_history", ("commodities", "GOLD"), {"limit": 5}, PriceHistory),
    ("/api/v2/{market}/trades/get-current-trend/{symbol}", "get_current_trend", ("forex", "EURUSD"), {}, CurrentTrend),
    ("/api/v2/{market}/trades/get-trend-segments/{symbol}", "get_trend_segments", ("stocks", "MSFT"), {"limit": 3}, TrendSegments),
    ("/api/v2/crypto/trades/get-trend-history/{symbol}/{limit}", "get_trend_history", ("BTC", 10), {}, TrendHistory),
    ("/api/v2/crypto/trades/get-backtest-history/{symbol}/{strategy}", "get_backtest_history", ("BTC", "aggressive"), {"years": 1, "limit": 5, "fill": "next_open"}, TradeList),
    ("/api/v2/crypto/trades/get-backtest-summary/{symbol}/{strategy}", "get_backtest_summary", ("ETH", "conservative"), {"years": 1, "fill": "next_open"}, BacktestSummary),
    ("/api/v2/crypto/trades/get-current-action/{symbol}/{strategy}", "get_current_action", ("BNB", "aggressive"), {}, CurrentAction),
    ("/api/v2/crypto/trades/get-recent-buys", "get_recent_buys", (), {"strategy": "aggressive", "limit": 4}, TradeList),
    ("/api/v2/crypto/trades/get-recent-sells", "get_recent_sells", (), {"limit": 4, "skip": 1}, TradeList),
    ("/api/v2/crypto/trades/get-recommendations", "get_recommendations", (), {"min_score": 0.0}, RecommendationList),
    ("/api/v2/sentiment/sentiment/{coin}/{days}", "legacy_sentiment", ("BTC", 7), {}, LegacySentiment),
    ("/api/v2/market/trends/{coin}", "legacy_trends", ("btc",), {}, LegacyTrends),
]  # fmt: skip
"""Route template of the spec, SDK method, arguments, the resource it answers."""
FILES = {"/api/v2/{market}/bulk/{dataset}": "bulk_export"}
"""Routes that answer files, not resources: template -> the SDK method that saves them."""
PUBLIC = {"/api/v1/status"}
"""Routes that carry no balance headers (no token accounting)."""
FREE = {"/api/v1/versions", "/api/v2/{market}/data-status"}
"""Metered routes that cost 0 tokens with a key."""


def template_pattern(template: str) -> re.Pattern[str]:
    return re.compile(re.sub(r"\{[a-z_]+\}", "[^/]+", template) + "$")


def article_id(client: Client) -> str:
    return client.get_recent_briefs("crypto", "BTC", limit=1).briefs[0].article_id


def resolved(args: tuple[Any, ...], client: Client) -> tuple[Any, ...]:
    """The arguments with ARTICLE replaced by a real article id (one more request only then)."""
    if ARTICLE not in args:
        return args
    return tuple(article_id(client) if arg == ARTICLE else arg for arg in args)


def test_the_sdk_has_a_method_for_every_operation_of_the_served_openapi_document(
    served_api: ServedApi,
) -> None:
    """One typed method per route: the routes this table covers are exactly the API's."""
    document = httpx.get(f"{served_api.base}/schema/openapi.json").json()
    assert {path for path, item in document["paths"].items() if "get" in item} == {
        template for template, *_ in ROUTES
    } | set(FILES)
    assert all(callable(getattr(Client, method, None)) for method in FILES.values())


@pytest.mark.parametrize(("template", "method", "args", "kwargs", "answer"), ROUTES)
def test_every_method_decodes_its_route_into_the_spec_resource_and_reads_the_balance(
    client: Client,
    recorder: Recorder,
    template: str,
    method: str,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    answer: type[Resource],
) -> None:
    """Each method calls its route (path and query as the spec names them), decodes the 200 into
    the resource strictly (msgspec checks every field's type), and keeps the balance headers."""
    got = getattr(client, method)(*resolved(args, client), **kwargs)
    assert isinstance(got, answer)
    sent = recorder.exchanges[-1]
    assert template_pattern(template).match(sent.path), sent.path
    for name, value in kwargs.items():
        assert f"{name}={value}" in sent.query
    assert sent.status == 200
    if template not in PUBLIC:
        assert client.balance is not None
        assert client.balance.cost == int(sent.response_headers["x-tokens-cost"])
        assert (client.balance.cost == 0) if template in FREE else (client.balance.cost >= 1)


def test_the_async_client_answers_every_route_as_the_sync_one(
    served_api: ServedApi, internal_key: str, client: Client
) -> None:
    """AsyncClient's methods are the same routes with the same answers."""
    expected = {
        method: getattr(client, method)(*resolved(args, client), **kwargs)
        for template, method, args, kwargs, _ in ROUTES
        if template not in PUBLIC
    }

    async def collect() -> dict[str, Resource]:
        async with async_client(served_api.base, internal_key, Recorder()) as aclient:
            return {
                method: await getattr(aclient, method)(*resolved(args, client), **kwargs)
                for template, method, args, kwargs, _ in ROUTES
                if template not in PUBLIC
            }

    assert asyncio.run(collect()) == expected


def test_a_new_key_reads_its_sandbox_balance_from_the_headers_of_a_ping(
    served_api: ServedApi,
) -> None:
    """The balance of a fresh sandbox key after one metered ping: 1 token of 3,000 and 1,000."""
    with Client(served_api.new_key("sandbox"), base_url=served_api.base) as fresh:
        assert fresh.balance is None
        fresh.ping()
        assert msgspec.structs.asdict(fresh.balance) == {  # type: ignore[arg-type]
            "cost": 1,
            "limit": 3000,
            "limit_today": 1000,
            "remaining": 2999,
            "remaining_today": 999,
        }


def test_a_repeated_request_revalidates_with_its_etag_and_a_304_returns_the_cached_body(
    client: Client, recorder: Recorder
) -> None:
    """Conditional requests: the second call sends If-None-Match with the first call's ETag; the
    server's 304 has no body and the client answers with the body it kept."""
    first = client.get_indicators("crypto", "BTC", period=20)
    assert not client.revalidated
    second = client.get_indicators("crypto", "BTC", period=20)
    assert client.revalidated
    assert second == first
    initial, repeat = recorder.exchanges
    assert "if-none-match" not in initial.request_headers
    assert repeat.request_headers["if-none-match"] == initial.response_headers["etag"]
    assert repeat.status == 304
    assert repeat.response_headers["x-tokens-cost"] == "0", "a 304 is free (decisions.md)"
    assert initial.response_headers["x-tokens-cost"] == "8"
    client.get_indicators("crypto", "BTC", period=21)
    assert "if-none-match" not in recorder.exchanges[-1].request_headers, "another request"


def test_a_client_with_no_cache_never_sends_if_none_match(
    served_api: ServedApi, internal_key: str, recorder: Recorder
) -> None:
    with recorder.sync_http() as http:
        uncached = Client(internal_key, base_url=served_api.base, cache_size=0, http=http)
        uncached.ping()
        uncached.ping()
    assert recorder.statuses == [200, 200]
    assert all("if-none-match" not in e.request_headers for e in recorder.exchanges)


@pytest.mark.parametrize(("page_size", "requests"), [(1, 4), (2, 2), (1000, 1)])
def test_iter_symbols_walks_every_page_of_list_symbols_once(
    client: Client, recorder: Recorder, page_size: int, requests: int
) -> None:
    """Pagination: skip advances by the page size; a short page ends the walk (3 crypto symbols:
    pages of 1 are 3 full pages and an empty one)."""
    walked = list(client.iter_symbols("crypto", page_size=page_size))
    assert walked == ["BNB", "BTC", "ETH"]
    assert len(recorder.exchanges) == requests
    skips = [re.search(r"skip=(\d+)", e.query) for e in recorder.exchanges]
    assert [int(m.group(1)) for m in skips if m] == [i * page_size for i in range(requests)]


@pytest.mark.parametrize("side", ["buys", "sells"])
def test_iterating_recent_trades_in_small_pages_gives_the_one_big_page(
    client: Client, side: str
) -> None:
    """Pages of 7 concatenated are the first 30 of a page of 30: no trade skipped or repeated."""
    iterate = getattr(client, f"iter_recent_{side}")
    fetched = getattr(client, f"get_recent_{side}")(strategy="conservative", limit=30).trades
    assert len(fetched) > 7
    assert list(islice(iterate(strategy="conservative", page_size=7), 30)) == fetched


def test_the_async_iterators_walk_the_same_pages(served_api: ServedApi, internal_key: str) -> None:
    async def walk() -> tuple[list[str], int]:
        async with async_client(served_api.base, internal_key, Recorder()) as aclient:
            symbols = [symbol async for symbol in aclient.iter_symbols("stocks", page_size=2)]
            sells = [trade async for trade in aclient.iter_recent_sells(page_size=100)]
            return symbols, len(sells)

    symbols, sells = asyncio.run(walk())
    assert symbols == ["AAPL", "MSFT", "NVDA"]
    with Client(base_url=served_api.base, api_key=internal_key) as sync:
        assert sells == len(list(sync.iter_recent_sells(page_size=100)))


def test_a_page_size_above_the_route_bound_is_lowered_to_it(
    client: Client, recorder: Recorder
) -> None:
    """The server clamps list-symbols' limit to 1000: asking more would end the walk early."""
    list(client.iter_symbols("forex", page_size=5000))
    assert "limit=1000" in recorder.exchanges[0].query


def warehouse_prices(data_dir: Path, symbol: str) -> list[tuple[Any, ...]]:
    """(date, close) of the symbol's stored daily prices, oldest first, read with DuckDB."""
    manifest = read_manifest(data_dir / "warehouse")
    assert manifest is not None
    files = [str(data_dir / "warehouse" / f) for f in manifest.files("daily_prices")]
    sql = "SELECT date, close FROM read_parquet(?) WHERE symbol = ? ORDER BY date"
    with duckdb.connect() as con:
        return con.execute(sql, [files, symbol]).fetchall()


def test_price_history_to_polars_is_the_warehouse_series(
    client: Client, embedded_market: Path
) -> None:
    """to_polars on a series: one row per point in the spec's field order, dates as dates, equal to
    the stored daily prices read independently with DuckDB."""
    frame = client.get_price_history("crypto", "BTC").to_polars()
    assert frame.columns == ["timestamp", "date", "price", "volume"]
    assert frame.schema["date"] == pl.Date
    stored = warehouse_prices(embedded_market, "BTC")
    assert frame.height == len(stored) > 300
    assert frame["date"].to_list() == [day for day, _ in stored]
    assert frame["price"].to_list() == pytest.approx([close for _, close in stored], rel=1e-12)


@pytest.mark.parametrize(
    ("method", "args", "rows_of", "columns"),
    [
        ("get_sentiment_history", ("crypto", "ETH"), "sentiment", ["positive", "timestamp", "total", "date"]),
        ("get_trend_history", ("BTC", 40), "trends", ["timestamp", "date", "price", "strength", "trend"]),
        ("get_trend_segments", ("forex", "EURUSD"), "trend_segments", ["close", "started_at", "started_on"]),
        ("get_backtest_history", ("BTC", "conservative"), "trades", ["strategy", "exit_reason", "action"]),
    ],
)  # fmt: skip
def test_every_series_result_becomes_a_frame_row_for_row(
    client: Client, method: str, args: tuple[Any, ...], rows_of: str, columns: list[str]
) -> None:
    result = getattr(client, method)(*args)
    rows = getattr(result, rows_of)
    frame = result.to_polars()
    assert frame.height == len(rows) > 0
    assert frame.columns[: len(columns)] == columns
    first = msgspec.to_builtins(rows[0])
    assert frame.row(0, named=True)[columns[0]] == first[columns[0]]


def test_an_empty_series_is_an_empty_frame_with_the_resource_columns() -> None:
    frame = PriceHistory(price_history=[]).to_polars()
    assert frame.columns == ["timestamp", "date", "price", "volume"]
    assert frame.height == 0


def test_the_client_reads_its_key_and_address_from_the_environment(
    served_api: ServedApi, internal_key: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """MI_API_KEY and MI_API_URL, as the MCP server and docs/clients.md use them."""
    monkeypatch.setenv("MI_API_KEY", internal_key)
    monkeypatch.setenv("MI_API_URL", served_api.base + "/")
    with Client() as from_env:
        assert from_env.base_url == served_api.base
        from_env.ping()
        assert from_env.balance is not None


def test_the_async_client_offers_every_method_of_the_sync_one_as_a_coroutine() -> None:
    """Every route method of Client exists on AsyncClient as a coroutine function (iterators as
    async iterators; `close` is `aclose`; `at` makes a client, it sends nothing)."""
    state = {"balance", "base_url", "revalidated", "data_version", "data_published", "as_of", "at"}
    methods = {name for name in dir(Client) if not name.startswith("_")} - state - {"close"}
    for name in methods:
        method = getattr(AsyncClient, name)
        assert asyncio.iscoroutinefunction(method) or name.startswith("iter_"), name
    assert asyncio.iscoroutinefunction(AsyncClient.aclose)


def test_at_answers_every_data_route_as_of_a_version_and_says_which(
    client: Client, recorder: Recorder
) -> None:
    """`Client.at` sends `as_of` on every data route (not on the version log); each client says
    which data version answered it last."""
    now = client.get_price_history("crypto", "BTC", limit=3)
    version = client.data_version
    assert version is not None
    assert client.data_published is not None
    assert client.data_published.endswith("Z")
    past = client.at(version)
    assert past.as_of == version
    assert past.get_price_history("crypto", "BTC", limit=3) == now
    assert f"as_of={version}" in recorder.exchanges[-1].query
    assert past.data_version == version
    listed = past.list_versions(limit=1)
    assert "as_of" not in recorder.exchanges[-1].query
    assert listed.versions[0].version == version
    instant = past.at(datetime(2999, 1, 1, tzinfo=UTC))  # the future: now
    assert instant.get_price_history("crypto", "BTC", limit=3) == now
    assert "as_of=2999-01-01T00%3A00%3A00Z" in recorder.exchanges[-1].query
    past.close()
    assert client.ping().text == "pong"  # the shared connection stays open
