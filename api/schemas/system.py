"""Bodies of the public /api/v1 routes: Ping and SystemStatus."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from api.schemas.base import Wire

CheckStatus = Literal["ok", "degraded", "error"]


class Ping(Wire, frozen=True):
    """Liveness answer."""

    text: str


class Check(Wire, frozen=True):
    """One backing datastore's health: `latency_ms` is null where no round trip was measured."""

    status: CheckStatus
    latency_ms: float | None


class SystemStatus(Wire, frozen=True):
    """The service's overall status and one check per backing datastore."""

    status: CheckStatus
    version: str
    time: datetime
    checks: dict[str, Check]
