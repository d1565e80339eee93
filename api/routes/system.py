"""The public /api/v1 routes: liveness and system status (no authentication)."""

from __future__ import annotations

from typing import Any

from litestar import Controller, Request, get
from litestar.di import NamedDependency

from api.health import Health
from api.request_values import RequestValues
from api.schemas import Ping, SystemStatus

PONG = Ping(text="pong")


class SystemController(Controller):
    """Ping and status. A route's `opt["operation"]` names it to the metering layer; status has none: it is never metered."""

    path = "/api/v1"
    tags = ["system"]  # noqa: RUF012 (Litestar reads this class attribute)

    @get("/ping", summary="Liveness check", opt={"operation": "ping", "key": "optional"})
    async def ping(self, request: Request[Any, Any, Any]) -> Ping:
        if request.scope["query_string"]:  # ping takes no parameter: one sent is a 422
            RequestValues.of(request.scope).check()
        return PONG

    @get(
        "/status",
        summary="System status with one check per backing datastore",
    )
    async def status(self, health: NamedDependency[Health]) -> SystemStatus:
        return await health.status()
