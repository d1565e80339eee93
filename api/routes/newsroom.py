"""/api/v2/{market}/newsroom: briefs and articles; crypto's instrument analyses and market summary."""

from __future__ import annotations

import time
from typing import Any

from litestar import Controller, Request, Response, get
from litestar.params import FromPath

from api.errors import NotFound, error_responses
from api.params import BRIEFS_LIMIT, CRYPTO_ONLY, KEYWORDS, SEARCH_LIMIT, keyword_list
from api.request_values import RequestValues
from api.responses import serve
from api.routes.common import (
    Row,
    instrument_served,
    iso_date,
    market_of,
    request_snapshot,
    require_tables,
    rows,
    take_snapshot,
    to_wire,
)
from api.schemas import Brief, BriefList, InstrumentAnalysis, MarketSummary
from api.warehouse import WarehouseSnapshot

DAY_MS = 86_400_000
WINDOW_STEP_MS = 60_000
"""search-briefs' 24-hour window moves by whole minutes, so one minute's answers share a cache entry."""


def brief(row: Row) -> Brief:
    return to_wire(Brief, {**row, "date": iso_date(row["date"])})


def keyword_filter(words: list[str]) -> str:
    """SQL over `words` (`keyword_list`): every keyword occurs in the title (any case)."""
    return "".join(" AND contains(lower(title), ?)" for _ in words)


def latest(snapshot: WarehouseSnapshot, table: str, where: str, params: list[object]) -> Any:
    """The newest row of `table` matching `where`, 404 when there is none."""

    async def fetch() -> Row:
        sql = f"SELECT * FROM {table} WHERE {where} ORDER BY timestamp DESC LIMIT 1"
        found = await rows(snapshot, sql, params)
        if not found:
            raise NotFound(f"No {table.replace('_', ' ')} found")
        row = found[0]
        return {**row, "date": iso_date(row["date"])}

    return fetch


class NewsroomController(Controller):
    """Briefs of any market: one article, recent briefs, search within the past 24 hours."""

    path = "/api/v2/{market:str}/newsroom"
    tags = ["newsroom"]  # noqa: RUF012 (Litestar reads this class attribute)
    before_request = staticmethod(take_snapshot)

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
            sql = "SELECT * FROM briefs WHERE market = ? AND article_id = ?"
            found = await rows(snapshot, sql, [market, article_id])
            if not found:
                raise NotFound(f"Article '{article_id}' not found")
            return brief(found[0])

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
            sql = (
                "SELECT * FROM briefs WHERE market = ? AND list_contains(symbols, ?) "
                "ORDER BY timestamp DESC NULLS LAST, article_id LIMIT ?"
            )
            found_rows = await rows(snapshot, sql, [market, found.symbol, limit])
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
        now = int(time.time() * 1000) // WINDOW_STEP_MS * WINDOW_STEP_MS
        title_sql = keyword_filter(words)

        async def build() -> BriefList:
            sql = (
                "SELECT * FROM briefs WHERE market = ? AND list_contains(symbols, ?) "
                f"AND timestamp >= ? AND timestamp <= ?{title_sql} "
                "ORDER BY timestamp DESC, article_id LIMIT ?"
            )
            params = [market, found.symbol, now - DAY_MS, now + WINDOW_STEP_MS, *words, limit]
            return BriefList(briefs=[brief(r) for r in await rows(snapshot, sql, params)])

        key = ("search-briefs", market, found.symbol, tuple(words), limit, now)
        return await serve(request, snapshot, key, build, remember=False)  # the window moves


class CryptoNewsroomController(Controller):
    """Crypto only: the AI-written analysis per coin and today's market summary."""

    path = "/api/v2/crypto/newsroom"
    tags = ["newsroom"]  # noqa: RUF012 (Litestar reads this class attribute)
    before_request = staticmethod(take_snapshot)

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
        fetch = latest(
            snapshot,
            "instrument_analyses",
            "market = ? AND upper(symbol) = ?",
            [market, found.symbol],
        )

        async def build() -> InstrumentAnalysis:
            return to_wire(InstrumentAnalysis, await fetch())

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
        fetch = latest(snapshot, "market_summaries", "market = ?", [market])

        async def build() -> MarketSummary:
            return to_wire(MarketSummary, await fetch())

        return await serve(request, snapshot, ("get-market-summary",), build)
