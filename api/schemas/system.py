"""Bodies of the public /api/v1 routes: Ping and SystemStatus."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from api.schemas.base import Wire

CheckStatus = Literal["ok", "degraded", "error"]


class Ping(Wire, frozen=True):
    """Liveness answer."""

    text: str
    """A short liveness word."""


class Check(Wire, frozen=True):
    """One backing datastore's health: `latency_ms` is null where no round trip was measured."""

    status: CheckStatus
    """`ok`, `degraded` or `error`."""
    latency_ms: float | None
    """The check's round trip in milliseconds; null where none was measured."""


class SystemStatus(Wire, frozen=True):
    """The service's overall status and one check per backing datastore."""

    status: CheckStatus
    """`ok`, `degraded` or `error`: the worst of the critical checks."""
    version: str
    """The API's version."""
    time: datetime
    """The server's clock, RFC 3339."""
    checks: dict[str, Check]
    """One check per backing datastore, by name."""


class DataVersion(Wire, frozen=True):
    """One retained data version."""

    version: str
    """Its id, as `x-data-version` carries it and `as_of` takes it."""
    published: str
    """When it was published, RFC 3339 UTC."""
    changed: dict[str, list[str]]
    """market -> the tables this version changed."""


class VersionList(Wire, frozen=True):
    """Retained data versions, newest first."""

    versions: list[DataVersion]
    """Newest first."""
