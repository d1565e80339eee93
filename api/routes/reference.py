"""/api/v2/{market}/reference: what happened to an instrument (its corporate actions)."""

from __future__ import annotations

from datetime import date
from typing import Any

from litestar import Controller, Request, Response, get
from litestar.params import FromPath

from api.errors import error_responses
from api.params import ACTIONS_FROM, ACTIONS_TO, day_param, day_range
from api.queries import reference as queries
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
from api.schemas import CorporateAction, CorporateActionList


class ReferenceController(Controller):
    """An instrument's splits, dividends, listing and delisting."""

    path = "/api/v2/{market:str}/reference"
    tags = ["reference"]  # noqa: RUF012 (Litestar reads this class attribute)
    before_request = staticmethod(take_snapshot)
    opt = DATA_ROUTES

    @get(
        "/get-corporate-actions/{symbol:str}",
        opt={"operation": "get-corporate-actions", "query": (ACTIONS_FROM, ACTIONS_TO)},
        responses=error_responses(404, 422, 503),
    )
    async def get_corporate_actions(
        self, request: Request[Any, Any, Any], symbol: FromPath[str]
    ) -> Response[CorporateActionList]:
        snapshot = request_snapshot(request)
        market = market_of(request)
        values = RequestValues.of(request.scope)
        since, until = (
            day_param("from", values.text(ACTIONS_FROM)),
            day_param("to", values.text(ACTIONS_TO)),
        )
        day_range(since, until)
        first, last = since or date.min, until or date.max
        found = await instrument_served(snapshot, market, symbol, "corporate_actions")

        async def build() -> CorporateActionList:
            stored = await queries.corporate_actions(snapshot, market, found.symbol, first, last)
            actions = [to_wire(CorporateAction, {**r, "date": iso_date(r["date"])}) for r in stored]
            return CorporateActionList(corporate_actions=actions)

        key = ("get-corporate-actions", market, found.symbol, first, last)
        return await serve(request, snapshot, key, build)
