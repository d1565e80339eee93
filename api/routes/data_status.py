"""/api/v2/{market}/data-status: each day's condition, from the checks the pipeline ran on it."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from typing import Any

from litestar import Controller, Request, Response, get

from api.errors import InvalidParameter, error_responses
from api.params import STATUS_DAYS, STATUS_DEFAULT_DAYS, STATUS_FROM, STATUS_TO, day_param
from api.queries import Row
from api.queries import data_status as queries
from api.request_values import RequestValues
from api.responses import serve
from api.routes.common import (
    DATA_ROUTES,
    market_of,
    request_instant_ms,
    request_snapshot,
    require_tables,
    take_snapshot,
)
from api.schemas import DataStatus, DayStatus
from pipelines.catalog.quality import day_status, last_due_day, market_days


def requested_days(since: date | None, until: date | None, today: date) -> tuple[date, date]:
    """`from` and `to` with their defaults (the 30 days through today), 422 when `from` is after
    `to`; a longer range than 366 days is cut to its newest 366 (clamped, as limits are)."""
    last = until or today
    first = since or _days_before(last, STATUS_DEFAULT_DAYS - 1)
    if first > last:
        raise InvalidParameter("from", "must not be later than 'to'")
    return max(first, _days_before(last, STATUS_DAYS - 1)), last


def _days_before(day: date, days: int) -> date:
    """`days` before `day`, or the first day there is (`to=0001-01-05` is a valid request)."""
    return day - timedelta(days=days) if (day - date.min).days >= days else date.min


def statuses(
    market: str,
    first: date,
    last: date,
    last_due: date,
    prices: list[Row],
    news: list[Row],
) -> list[DayStatus]:
    """Every day of the market's calendar from `first` through `last`, newest first: a day the
    prices do not hold has no bars; the news checks' failures join the prices'."""
    by_day = {row["date"]: row for row in prices}
    news_by_day = {row["date"]: row for row in news}
    days = []
    for day in reversed(market_days(market, first, last)):
        price = by_day.get(day, {})
        extra = news_by_day.get(day, {})
        warnings = [*price.get("warnings", ()), *extra.get("warnings", ())]
        errors = [*price.get("errors", ()), *extra.get("errors", ())]
        status = day_status(day <= last_due, price.get("bars", 0), warnings, errors)
        checks = sorted({*warnings, *errors})
        days.append(DayStatus(date=day.isoformat(), status=status, checks=checks))
    return days


class DataStatusController(Controller):
    """The condition of each day of a market. Free with a valid key (`data-status` costs 0)."""

    path = "/api/v2/{market:str}"
    tags = ["versions"]  # noqa: RUF012 (Litestar reads this class attribute)
    before_request = staticmethod(take_snapshot)
    opt = DATA_ROUTES

    @get(
        "/data-status",
        opt={"operation": "data-status", "query": (STATUS_FROM, STATUS_TO)},
        responses=error_responses(404, 422, 503),
    )
    async def data_status(self, request: Request[Any, Any, Any]) -> Response[DataStatus]:
        snapshot = request_snapshot(request)
        market = market_of(request)
        values = RequestValues.of(request.scope)
        now = datetime.fromtimestamp(request_instant_ms(request) / 1000, UTC)
        since = day_param("from", values.text(STATUS_FROM))
        until = day_param("to", values.text(STATUS_TO))
        first, last = requested_days(since, until, now.date())
        last_due = last_due_day(now)
        require_tables(snapshot, "price_days")

        async def build() -> DataStatus:
            prices = await queries.price_days(snapshot, market, first, last)
            news = await queries.news_days(snapshot, market, first, last)
            return DataStatus(
                market=market, days=statuses(market, first, last, last_due, prices, news)
            )

        # The answer moves with the clock only when a day becomes due: the newest due day is
        # part of its key (and ETag), and the raw request is not remembered across the clock.
        due = min(last_due, last) if last_due >= first else None
        key = ("data-status", market, first, last, due)
        return await serve(request, snapshot, key, build, remember=False)
