"""/api/v2/{market}/newsroom: briefs and articles; crypto's instrument analyses and market summary."""

from __future__ import annotations

from typing import Any

from litestar import Controller, Request, Response, get
from litestar.params import FromPath

from api.errors import NotFound, error_responses
from api.params import BRIEFS_LIMIT, CRYPTO_ONLY, KEYWORDS, SEARCH_LIMIT, keyword_list
from api.queries import DAY_MS
from api.queries import newsroom as queries
from api.request_values import RequestValues
from api.responses import serve
from api.routes.common import (
    DATA_ROUTES,
    Row,
    instrument_served,
    iso_date,
    market_of,
    request_instant_ms,
    request_snapshot,
    require_tables,
    take_snapshot,
    to_wire,
)
from api.schemas import Brief, BriefList, InstrumentAnalysis, MarketSummary

WINDOW_STEP_MS = 60_000
"""search-briefs' 24-hour window moves by whole minutes, so one minute's answers share a cache entry."""


def brief(row: Row) -> Brief:
    return to_wire(Brief, {**row, "date": iso_date(row["date"])})


def dated(row: Row | None, table: str) -> Row:
    """A written analysis with its ISO date; 404 naming the table when there is none."""
    if row is None:
        raise NotFound(f"No {table.replace('_', ' ')} found")
    return {**row, "date": iso_date(row["date"])}


class NewsroomController(Controller):
    """Briefs of any market: one article, recent briefs, search within the past 24 hours."""

    path = "/api/v2/{market:str}/newsroom"
    tags = ["newsroom"]  # noqa: RUF012 (Litestar reads this class attribute)
    before_request = staticmethod(take_snapshot)
    opt = DATA_ROUTES

    @get(
        "/get-article/{article_id:str}",
        opt={"operation": "get-article"},
        responses=error_responses(404, 503),
    )
    async def get_article(
        self,
        request: Request[Any, Any, Any],
        article_id: FromPath[str],
    ) -> Response[Brief]:
        snapshot = request_snapshot(request)
        market = market_of(request)
        require_tables(snapshot, "briefs")

        async def build() -> Brief:
            row = await queries.article(snapshot, market, article_id)
            if row is None:
                raise NotFound(f"Article '{article_id}' not found")
            return brief(row)

        return await serve(request, snapshot, ("get-article", market, article_id), build)

    @get(
        "/get-recent-briefs/{symbol:str}",
        opt={"operation": "get-recent-briefs", "query": (BRIEFS_LIMIT,)},
        responses=error_responses(400, 404, 422, 503),
    )
    async def get_recent_briefs(
        self,
        request: Request[Any, Any, Any],
        symbol: FromPath[str],
    ) -> Response[BriefList]:
        snapshot = request_snapshot(request)
        market = market_of(request)
        limit = RequestValues.of(request.scope).integer(BRIEFS_LIMIT)
        found = await instrument_served(snapshot, market, symbol, "briefs")

        async def build() -> BriefList:
            found_rows = await queries.recent_briefs(snapshot, market, found.symbol, limit)
            return BriefList(briefs=[brief(r) for r in found_rows])

        key = ("get-recent-briefs", market, found.symbol, limit)
        return await serve(request, snapshot, key, build)

    @get(
        "/search-briefs/{symbol:str}",
        opt={"operation": "search-briefs", "query": (KEYWORDS, SEARCH_LIMIT)},
        responses=error_responses(400, 404, 422, 503),
    )
    async def search_briefs(
        self,
        request: Request[Any, Any, Any],
        symbol: FromPath[str],
    ) -> Response[BriefList]:
        snapshot = request_snapshot(request)
        market = market_of(request)
        values = RequestValues.of(request.scope)
        limit, words = values.integer(SEARCH_LIMIT), keyword_list(values.text(KEYWORDS))
        found = await instrument_served(snapshot, market, symbol, "briefs")
        now = request_instant_ms(request) // WINDOW_STEP_MS * WINDOW_STEP_MS

        async def build() -> BriefList:
            since, until = now - DAY_MS, now + WINDOW_STEP_MS
            found_rows = await queries.search_briefs(
                snapshot, market, found.symbol, since, until, words, limit
            )
            return BriefList(briefs=[brief(r) for r in found_rows])

        key = ("search-briefs", market, found.symbol, tuple(words), limit, now)
        return await serve(request, snapshot, key, build, remember=False)  # the window moves


class CryptoNewsroomController(Controller):
    """Crypto only: the AI-written analysis per coin and today's market summary."""

    path = "/api/v2/crypto/newsroom"
    tags = ["newsroom"]  # noqa: RUF012 (Litestar reads this class attribute)
    before_request = staticmethod(take_snapshot)
    opt = DATA_ROUTES

    @get(
        "/get-instrument-analysis/{symbol:str}",
        opt={"operation": "get-instrument-analysis"},
        responses=error_responses(404, 503),
    )
    async def get_instrument_analysis(
        self,
        request: Request[Any, Any, Any],
        symbol: FromPath[str],
    ) -> Response[InstrumentAnalysis]:
        snapshot = request_snapshot(request)
        market = market_of(request, CRYPTO_ONLY)
        found = await instrument_served(snapshot, market, symbol, "instrument_analyses")

        async def build() -> InstrumentAnalysis:
            row = await queries.instrument_analysis(snapshot, market, found.symbol)
            return to_wire(InstrumentAnalysis, dated(row, "instrument_analyses"))

        key = ("get-instrument-analysis", found.symbol)
        return await serve(request, snapshot, key, build)

    @get(
        "/get-market-summary",
        opt={"operation": "get-market-summary"},
        responses=error_responses(404, 503),
    )
    async def get_market_summary(
        self,
        request: Request[Any, Any, Any],
    ) -> Response[MarketSummary]:
        snapshot = request_snapshot(request)
        market = market_of(request, CRYPTO_ONLY)
        require_tables(snapshot, "market_summaries")

        async def build() -> MarketSummary:
            row = await queries.market_summary(snapshot, market)
            return to_wire(MarketSummary, dated(row, "market_summaries"))

        return await serve(request, snapshot, ("get-market-summary",), build)
