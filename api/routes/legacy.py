"""The two legacy-form routes (crypto coins): a top-level `Success` envelope, `error` on failure."""

from __future__ import annotations

from typing import Annotated, Any

from litestar import Controller, Request, Response, get
from litestar.params import FromPath

from api.errors import error_responses
from api.params import LEGACY_SENTIMENT_DAYS
from api.queries import legacy as queries
from api.request_values import RequestValues
from api.responses import serve
from api.routes.common import (
    DATA_ROUTES,
    instrument_served,
    iso_date,
    request_snapshot,
    serving_of,
    take_snapshot,
)
from api.schemas import (
    LegacyCoinTrends,
    LegacySentimentPoint,
    LegacySentimentSuccess,
    LegacyTrend,
    LegacyTrendsSuccess,
)


class LegacyController(Controller):
    """`/api/v2/market/trends/<COIN>` (trend episodes, newest first) and
    `/api/v2/sentiment/sentiment/<COIN>/<DAYS>` (the last DAYS days up to the newest stored day)."""

    path = "/api/v2"
    tags = ["legacy"]  # noqa: RUF012 (Litestar reads this class attribute)
    before_request = staticmethod(take_snapshot)
    opt = DATA_ROUTES

    @get(
        "/market/trends/{coin:str}",
        opt={"operation": "legacy-trends"},
        responses=error_responses(404, 503),
    )
    async def legacy_trends(
        self,
        request: Request[Any, Any, Any],
        coin: FromPath[str],
    ) -> Response[LegacyTrendsSuccess]:
        snapshot = request_snapshot(request)
        market = serving_of(request).market("crypto")
        found = await instrument_served(snapshot, market, coin, "trend_segments")

        async def build() -> LegacyTrendsSuccess:
            trends = [
                LegacyTrend(
                    date=float(r["ended_at"]),
                    trend=r["trend"],
                    trend_started_on=iso_date(r["started_on"]) or "",
                    price_on_trend_start=r["start_close"],
                    duration_in_days=r["trend_duration_days"],
                    peak_gain=r["peak_gain"],
                    peak_loss=r["peak_loss"],
                    max_price=r["max_price"],
                    min_price=r["min_price"],
                )
                for r in await queries.trend_segments(snapshot, market, found.symbol)
            ]
            return LegacyTrendsSuccess(Success=LegacyCoinTrends(coin=found.symbol, trends=trends))

        return await serve(request, snapshot, ("legacy-trends", found.symbol), build)

    @get(
        "/sentiment/sentiment/{coin:str}/{days:str}",
        opt={"operation": "legacy-sentiment"},
        responses=error_responses(404, 422, 503),
    )
    async def legacy_sentiment(
        self,
        request: Request[Any, Any, Any],
        coin: FromPath[str],
        days: Annotated[str, LEGACY_SENTIMENT_DAYS.parameter()],
    ) -> Response[LegacySentimentSuccess]:
        snapshot = request_snapshot(request)
        market = serving_of(request).market("crypto")
        count = RequestValues.of(request.scope).integer(LEGACY_SENTIMENT_DAYS)
        found = await instrument_served(snapshot, market, coin, "sentiment_topics")

        async def build() -> LegacySentimentSuccess:
            points = [
                LegacySentimentPoint(
                    timestamp=float(r["timestamp"]),
                    topic=r["topic"],
                    positive=r["positive"],
                    negative=r["negative"],
                )
                for r in await queries.topic_sentiment(snapshot, market, found.symbol, count)
            ]
            return LegacySentimentSuccess(Success=points)

        return await serve(request, snapshot, ("legacy-sentiment", found.symbol, count), build)
