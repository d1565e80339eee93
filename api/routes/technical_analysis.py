"""/api/v2/{market}/technical-analysis: daily price history and technical indicators."""

from __future__ import annotations

from typing import Any

from litestar import Controller, Request, Response, get
from litestar.params import FromPath

from api.errors import InvalidParameter, NotFound, error_responses
from api.params import (
    ADJUSTMENT,
    INDICATOR_PERIOD,
    PRICE_POINTS_LIMIT,
    PRICES_FROM,
    PRICES_TO,
    adjustment_param,
)
from api.queries import technical_analysis as queries
from api.request_values import RequestValues
from api.responses import serve
from api.routes.common import (
    DATA_ROUTES,
    Row,
    adjusted_index,
    instrument_served,
    iso_date,
    market_of,
    request_snapshot,
    take_snapshot,
)
from api.schemas import (
    BollingerBands,
    FibonacciRetracement,
    Indicators,
    IndicatorValues,
    Macd,
    PriceHistory,
    PricePoint,
    StochasticOscillator,
    Wire,
)

FIB_BOUNDS = ("fib_high", "fib_low")


def price_points(found: list[Row]) -> PriceHistory:
    """Oldest first (the query returns newest first so LIMIT keeps the most recent)."""
    points = [
        PricePoint(
            timestamp=r["timestamp"],
            date=iso_date(r["date"]) or "",
            price=r["price"],
            volume=r["volume"],
        )
        for r in reversed(found)
    ]
    return PriceHistory(price_history=points)


def indicator_values(row: Row) -> IndicatorValues:
    # Level columns are fib_<level> with "." written "_" (fib_23_6 is level "23.6").
    levels = {
        name.removeprefix("fib_").replace("_", "."): value
        for name, value in row.items()
        if name.startswith("fib_") and name not in FIB_BOUNDS
    }
    return IndicatorValues(
        adx=row["adx"],
        atr=row["atr"],
        bollinger_bands=BollingerBands(
            upper=row["bb_upper"], lower=row["bb_lower"], middle=row["bb_middle"]
        ),
        ema=row["ema"],
        fibonacci_retracement=FibonacciRetracement(
            high=row["fib_high"], low=row["fib_low"], levels=levels
        ),
        macd=Macd(
            histogram=row["macd_histogram"],
            macd_line=row["macd_line"],
            signal_line=row["macd_signal"],
        ),
        obv=row["obv"],
        roc=row["roc"],
        rsi=row["rsi"],
        sma=row["sma"],
        stochastic_oscillator=StochasticOscillator(k=row["stoch_k"], d=row["stoch_d"]),
        vwap=row["vwap"],
    )


def count_points(body: Wire) -> int:
    assert isinstance(body, PriceHistory)
    return len(body.price_history)


class TechnicalAnalysisController(Controller):
    """Price history (priced by points returned) and indicators per period."""

    path = "/api/v2/{market:str}/technical-analysis"
    tags = ["technical-analysis"]  # noqa: RUF012 (Litestar reads this class attribute)
    before_request = staticmethod(take_snapshot)
    opt = DATA_ROUTES

    @get(
        "/get-price-history/{symbol:str}",
        opt={
            "operation": "get-price-history",
            "query": (PRICE_POINTS_LIMIT, PRICES_FROM, PRICES_TO, ADJUSTMENT),
        },
        responses=error_responses(400, 404, 422, 503),
    )
    async def get_price_history(
        self,
        request: Request[Any, Any, Any],
        symbol: FromPath[str],
    ) -> Response[PriceHistory]:
        snapshot = request_snapshot(request)
        market = market_of(request)
        values = RequestValues.of(request.scope)
        limit = values.integer(PRICE_POINTS_LIMIT)
        start_ms, end_ms = values.integer(PRICES_FROM), values.integer(PRICES_TO)
        adjustment = adjustment_param(values.text(ADJUSTMENT))
        if start_ms is not None and end_ms is not None and start_ms > end_ms:
            raise InvalidParameter("from", "must not be later than 'to'")
        found = await instrument_served(snapshot, market, symbol, "daily_prices")

        changed = found.symbol in (await adjusted_index(snapshot)).get(market, ())
        series = adjustment if changed else "raw"

        async def build() -> PriceHistory:
            found_rows = await queries.price_points(
                snapshot, market, found.symbol, series, start_ms, end_ms, limit
            )
            return price_points(found_rows)

        key = ("get-price-history", market, found.symbol, adjustment, limit, start_ms, end_ms)
        return await serve(request, snapshot, key, build, points=count_points)

    @get(
        "/get-indicators/{symbol:str}",
        opt={"operation": "get-indicators", "query": (INDICATOR_PERIOD,)},
        responses=error_responses(400, 404, 422, 503),
    )
    async def get_indicators(
        self,
        request: Request[Any, Any, Any],
        symbol: FromPath[str],
    ) -> Response[Indicators]:
        snapshot = request_snapshot(request)
        market = market_of(request)
        period = RequestValues.of(request.scope).integer(INDICATOR_PERIOD)
        found = await instrument_served(snapshot, market, symbol, "indicator_snapshots")

        async def build() -> Indicators:
            row = await queries.indicator_snapshot(snapshot, market, found.symbol, period)
            if row is None:
                raise NotFound(f"No indicators for {found.symbol} over {period} days")
            values = indicator_values(row)
            return Indicators(period=period, symbol=found.symbol, indicators=values)

        return await serve(
            request, snapshot, ("get-indicators", market, found.symbol, period), build
        )
