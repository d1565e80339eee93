"""/api/v2 trades: crypto's trade simulator and trend history; other markets' current trend and segments."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from litestar import Controller, Request, Response, get
from litestar.params import FromPath

from api.errors import ApiFailure, NotFound, error_responses
from api.params import (
    BACKTEST_TRADES_LIMIT,
    BACKTEST_YEARS,
    CRYPTO_ONLY,
    FILL,
    MIN_SCORE,
    NON_CRYPTO,
    RECENT_TRADES_LIMIT,
    RECOMMENDATIONS_LIMIT,
    SKIP,
    STRATEGY_CHOICE,
    STRATEGY_FILTER,
    TREND_HISTORY_LIMIT,
    TREND_SEGMENTS_LIMIT,
    fill_param,
    strategy_param,
)
from api.queries import trades as queries
from api.request_values import RequestValues
from api.responses import serve
from api.routes.common import (
    DATA_ROUTES,
    Row,
    instrument_served,
    iso_date,
    market_of,
    request_snapshot,
    require_tables,
    take_snapshot,
    to_wire,
)
from api.schemas import (
    BacktestSummary,
    CurrentAction,
    CurrentTrend,
    Instrument,
    Recommendation,
    RecommendationList,
    Trade,
    TradeList,
    TrendEntry,
    TrendExtremeDay,
    TrendHistory,
    TrendPoint,
)
from api.schemas import (
    TrendSegments as TrendSegmentsBody,
)
from api.warehouse import WarehouseSnapshot
from pipelines.catalog import FILLS, STRATEGIES


def trade(row: Row) -> Trade:
    return to_wire(
        Trade,
        {**row, "start_date": iso_date(row["start_date"]), "sell_date": iso_date(row["sell_date"])},
    )


def extreme(row: Row, prefix: str) -> TrendExtremeDay:
    return TrendExtremeDay(
        close=row[f"{prefix}_close"],
        timestamp=row[f"{prefix}_timestamp"],
        date=iso_date(row[f"{prefix}_date"]) or "",
        trend=row[f"{prefix}_trend"],
    )


def trend_entry(row: Row) -> TrendEntry:
    fields = {**row, "started_on": iso_date(row["started_on"])}
    fields |= {
        "max_price_day": extreme(row, "max_price"),
        "min_price_day": extreme(row, "min_price"),
    }
    return to_wire(TrendEntry, fields)


RECENT_TRADES_QUERY = (RECENT_TRADES_LIMIT, SKIP, STRATEGY_FILTER)
FILL_HEADER = "x-fill"
"""The header every answer of the backtest routes carries once their `fill` is read."""
FILLED = {fill: ((FILL_HEADER.encode(), fill.encode()),) for fill in FILLS}
"""The raw `x-fill` header of a backtest route's 200 and 304, by fill."""


def with_fill(failure: ApiFailure, fill: str) -> ApiFailure:
    """An error of a backtest route after its fill was read: it says the fill too."""
    failure.headers[FILL_HEADER] = fill
    return failure


async def backtested(
    snapshot: WarehouseSnapshot, market: str, symbol: str, table: str, fill: str
) -> Instrument:
    """`instrument_served` for a backtest route: its 404 or 503 says the fill."""
    try:
        return await instrument_served(snapshot, market, symbol, table)
    except ApiFailure as failure:
        raise with_fill(failure, fill) from None


def strategies(value: str | None) -> tuple[str, ...]:
    """The `strategy` query of recent buys/sells: omitted means both."""
    return STRATEGIES if value is None else (strategy_param(value),)


class CryptoTradesController(Controller):
    """Crypto only: backtests, current action, recent signals, recommendations, trend history."""

    path = "/api/v2/crypto/trades"
    tags = ["trades"]  # noqa: RUF012 (Litestar reads this class attribute)
    before_request = staticmethod(take_snapshot)
    opt = DATA_ROUTES

    @get(
        "/get-backtest-history/{symbol:str}/{strategy:str}",
        opt={
            "operation": "get-backtest-history",
            "query": (BACKTEST_YEARS, BACKTEST_TRADES_LIMIT, FILL),
        },
        responses=error_responses(400, 404, 422, 503),
    )
    async def get_backtest_history(
        self,
        request: Request[Any, Any, Any],
        symbol: FromPath[str],
        strategy: FromPath[str],
    ) -> Response[TradeList]:
        snapshot = request_snapshot(request)
        market = market_of(request, CRYPTO_ONLY)
        chosen = strategy_param(strategy)
        values = RequestValues.of(request.scope)
        years, limit = values.integer(BACKTEST_YEARS), values.integer(BACKTEST_TRADES_LIMIT)
        fill = fill_param(values.text(FILL))
        found = await backtested(snapshot, market, symbol, "backtest_trades", fill)

        async def build() -> TradeList:
            found_rows = await queries.backtest_trades(
                snapshot, market, found.symbol, chosen, fill, years, limit
            )
            return TradeList(trades=[trade(r) for r in found_rows])

        key = ("get-backtest-history", found.symbol, chosen, fill, years, limit)
        return await serve(request, snapshot, key, build, headers=FILLED[fill])

    @get(
        "/get-backtest-summary/{symbol:str}/{strategy:str}",
        opt={"operation": "get-backtest-summary", "query": (BACKTEST_YEARS, FILL)},
        responses=error_responses(400, 404, 422, 503),
    )
    async def get_backtest_summary(
        self,
        request: Request[Any, Any, Any],
        symbol: FromPath[str],
        strategy: FromPath[str],
    ) -> Response[BacktestSummary]:
        snapshot = request_snapshot(request)
        market = market_of(request, CRYPTO_ONLY)
        chosen = strategy_param(strategy)
        values = RequestValues.of(request.scope)
        years, fill = values.integer(BACKTEST_YEARS), fill_param(values.text(FILL))
        found = await backtested(snapshot, market, symbol, "backtest_summaries", fill)

        async def build() -> BacktestSummary:
            row = await queries.backtest_summary(
                snapshot, market, found.symbol, chosen, fill, years
            )
            if row is None:
                raise with_fill(NotFound(f"No {chosen} backtest for {found.symbol}"), fill)
            dates = {
                "start_date": iso_date(row["start_date"]),
                "end_date": iso_date(row["end_date"]),
            }
            return to_wire(BacktestSummary, {**row, **dates})

        key = ("get-backtest-summary", found.symbol, chosen, fill, years)
        return await serve(request, snapshot, key, build, headers=FILLED[fill])

    @get(
        "/get-current-action/{symbol:str}/{strategy:str}",
        opt={"operation": "get-current-action"},
        responses=error_responses(400, 404, 503),
    )
    async def get_current_action(
        self,
        request: Request[Any, Any, Any],
        symbol: FromPath[str],
        strategy: FromPath[str],
    ) -> Response[CurrentAction]:
        snapshot = request_snapshot(request)
        market = market_of(request, CRYPTO_ONLY)
        chosen = strategy_param(strategy)
        found = await instrument_served(snapshot, market, symbol, "current_actions")

        async def build() -> CurrentAction:
            row = await queries.current_action(snapshot, market, found.symbol, chosen)
            if row is None:
                raise NotFound(f"No {chosen} action for {found.symbol}")
            return to_wire(CurrentAction, {**row, "symbol": found.symbol})

        return await serve(request, snapshot, ("get-current-action", found.symbol, chosen), build)

    async def _recent(
        self, request: Request[Any, Any, Any], side: Literal["buys", "sells"]
    ) -> Response[TradeList]:
        snapshot = request_snapshot(request)
        market = market_of(request, CRYPTO_ONLY)
        values = RequestValues.of(request.scope)
        chosen = strategies(values.text(STRATEGY_FILTER))
        limit, skip = values.integer(RECENT_TRADES_LIMIT), values.integer(SKIP)
        require_tables(snapshot, "backtest_trades")

        async def build() -> TradeList:
            found = await queries.recent_trades(snapshot, market, side, chosen, limit, skip)
            return TradeList(trades=[trade(r) for r in found])

        return await serve(request, snapshot, ("recent", side, chosen, limit, skip), build)

    @get(
        "/get-recent-buys",
        opt={"operation": "get-recent-buys", "query": RECENT_TRADES_QUERY},
        responses=error_responses(400, 404, 422, 503),
    )
    async def get_recent_buys(self, request: Request[Any, Any, Any]) -> Response[TradeList]:
        return await self._recent(request, "buys")

    @get(
        "/get-recent-sells",
        opt={"operation": "get-recent-sells", "query": RECENT_TRADES_QUERY},
        responses=error_responses(400, 404, 422, 503),
    )
    async def get_recent_sells(self, request: Request[Any, Any, Any]) -> Response[TradeList]:
        return await self._recent(request, "sells")

    @get(
        "/get-recommendations",
        opt={
            "operation": "get-recommendations",
            "query": (STRATEGY_CHOICE, RECOMMENDATIONS_LIMIT, MIN_SCORE),
        },
        responses=error_responses(400, 404, 422, 503),
    )
    async def get_recommendations(
        self, request: Request[Any, Any, Any]
    ) -> Response[RecommendationList]:
        snapshot = request_snapshot(request)
        market = market_of(request, CRYPTO_ONLY)
        values = RequestValues.of(request.scope)
        chosen = strategy_param(values.text(STRATEGY_CHOICE) or "")
        limit, min_score = values.integer(RECOMMENDATIONS_LIMIT), values.number(MIN_SCORE)
        require_tables(snapshot, "recommendations")

        async def build() -> RecommendationList:
            found = await queries.recommendations(snapshot, market, chosen, min_score, limit)
            return RecommendationList(recommendations=[to_wire(Recommendation, r) for r in found])

        return await serve(
            request, snapshot, ("get-recommendations", chosen, limit, min_score), build
        )

    @get(
        "/get-trend-history/{symbol:str}/{limit:str}",
        opt={"operation": "get-trend-history"},
        responses=error_responses(400, 404, 422, 503),
    )
    async def get_trend_history(
        self,
        request: Request[Any, Any, Any],
        symbol: FromPath[str],
        limit: Annotated[str, TREND_HISTORY_LIMIT.parameter()],
    ) -> Response[TrendHistory]:
        snapshot = request_snapshot(request)
        market = market_of(request, CRYPTO_ONLY)
        count = RequestValues.of(request.scope).integer(TREND_HISTORY_LIMIT)
        found = await instrument_served(snapshot, market, symbol, "trend_history")

        async def build() -> TrendHistory:
            found_rows = await queries.trend_history(snapshot, market, found.symbol, count)
            points = [to_wire(TrendPoint, {**r, "date": iso_date(r["date"])}) for r in found_rows]
            return TrendHistory(trends=points)

        return await serve(request, snapshot, ("get-trend-history", found.symbol, count), build)


class MarketTradesController(Controller):
    """Forex, commodities and stocks: the current trend and the trend segments."""

    path = "/api/v2/{market:str}/trades"
    tags = ["trades"]  # noqa: RUF012 (Litestar reads this class attribute)
    before_request = staticmethod(take_snapshot)
    opt = DATA_ROUTES

    @get(
        "/get-current-trend/{symbol:str}",
        opt={"operation": "get-current-trend"},
        responses=error_responses(404, 503),
    )
    async def get_current_trend(
        self,
        request: Request[Any, Any, Any],
        symbol: FromPath[str],
    ) -> Response[CurrentTrend]:
        snapshot = request_snapshot(request)
        market = market_of(request, NON_CRYPTO)
        found = await instrument_served(snapshot, market, symbol, "trend_segments")

        async def build() -> CurrentTrend:
            row = await queries.running_trend(snapshot, market, found.symbol)
            if row is None:
                raise NotFound(f"No trend for {found.symbol} yet")
            return CurrentTrend(current_trend=trend_entry(row), last_updated=row["last_updated"])

        return await serve(request, snapshot, ("get-current-trend", market, found.symbol), build)

    @get(
        "/get-trend-segments/{symbol:str}",
        opt={"operation": "get-trend-segments", "query": (TREND_SEGMENTS_LIMIT,)},
        responses=error_responses(400, 404, 422, 503),
    )
    async def get_trend_segments(
        self,
        request: Request[Any, Any, Any],
        symbol: FromPath[str],
    ) -> Response[TrendSegmentsBody]:
        snapshot = request_snapshot(request)
        market = market_of(request, NON_CRYPTO)
        limit = RequestValues.of(request.scope).integer(TREND_SEGMENTS_LIMIT)
        found = await instrument_served(snapshot, market, symbol, "trend_segments")

        async def build() -> TrendSegmentsBody:
            found_rows = await queries.trend_segments(snapshot, market, found.symbol, limit)
            updated = max((r["last_updated"] for r in found_rows), default=None)
            entries = [trend_entry(r) for r in found_rows]
            return TrendSegmentsBody(trend_segments=entries, last_updated=updated)

        key = ("get-trend-segments", market, found.symbol, limit)
        return await serve(request, snapshot, key, build)
