"""/api/v2/{market}/sentiment: daily brief counts per symbol, newest first."""

from __future__ import annotations

from typing import Any

from litestar import Controller, Request, Response, get
from litestar.params import FromPath

from api.errors import error_responses
from api.params import SENTIMENT_LIMIT
from api.queries import sentiment as queries
from api.request_values import RequestValues
from api.responses import serve
from api.routes.common import (
    DATA_ROUTES,
    instrument_served,
    iso_date,
    market_of,
    request_snapshot,
    take_snapshot,
    to_wire,
)
from api.schemas import SentimentHistory, SentimentPoint


class SentimentController(Controller):
    """Sentiment history (`limit` days with news, clamped to its bounds)."""

    path = "/api/v2/{market:str}/sentiment"
    tags = ["sentiment"]  # noqa: RUF012 (Litestar reads this class attribute)
    before_request = staticmethod(take_snapshot)
    opt = DATA_ROUTES

    @get(
        "/get-sentiment-history/{symbol:str}",
        opt={"operation": "get-sentiment-history", "query": (SENTIMENT_LIMIT,)},
        responses=error_responses(400, 404, 422, 503),
    )
    async def get_sentiment_history(
        self,
        request: Request[Any, Any, Any],
        symbol: FromPath[str],
    ) -> Response[SentimentHistory]:
        snapshot = request_snapshot(request)
        market = market_of(request)
        limit = RequestValues.of(request.scope).integer(SENTIMENT_LIMIT)
        found = await instrument_served(snapshot, market, symbol, "sentiment_daily")

        async def build() -> SentimentHistory:
            found_rows = await queries.sentiment_days(snapshot, market, found.symbol, limit)
            points = [
                to_wire(SentimentPoint, {**r, "symbol": found.symbol, "date": iso_date(r["date"])})
                for r in found_rows
            ]
            return SentimentHistory(sentiment=points)

        key = ("get-sentiment-history", market, found.symbol, limit)
        return await serve(request, snapshot, key, build)
