"""The public /api/v1 routes: ping's shape and status's checks and overall status."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta

import anyio
import pytest
from litestar import Litestar
from litestar.testing import TestClient

from api.health import PingCheck
from tests.api.conftest import Publish

ClientFor = Callable[..., TestClient[Litestar]]


def test_ping_answers_pong(client: TestClient[Litestar]) -> None:
    response = client.get("/api/v1/ping")
    assert response.status_code == 200
    assert response.headers["content-type"] == "application/json"
    assert response.json() == {"text": "pong"}


def test_status_has_the_spec_shape(client: TestClient[Litestar]) -> None:
    body = client.get("/api/v1/status").json()
    assert set(body) == {"status", "version", "time", "checks"}
    assert body["version"] == "1.0.0"
    assert datetime.fromisoformat(body["time"]).tzinfo is not None
    for check in body["checks"].values():
        assert set(check) == {"status", "latency_ms"}


def test_status_is_ok_when_the_warehouse_is_readable_and_fresh(
    publish: Publish, client_for: ClientFor
) -> None:
    publish(1, [1.0, 2.0, 3.0])
    body = client_for().get("/api/v1/status").json()
    assert body["status"] == "ok"
    assert body["checks"]["warehouse"]["status"] == "ok"
    assert body["checks"]["warehouse"]["latency_ms"] >= 0
    assert body["checks"]["materialization"] == {"status": "ok", "latency_ms": None}


def test_status_without_a_warehouse_is_error(client: TestClient[Litestar]) -> None:
    body = client.get("/api/v1/status").json()
    assert body["status"] == "error"
    assert body["checks"]["warehouse"] == {"status": "error", "latency_ms": None}
    assert body["checks"]["materialization"] == {"status": "degraded", "latency_ms": None}


def test_status_is_degraded_when_the_materialization_is_stale(
    publish: Publish, client_for: ClientFor
) -> None:
    publish(1, [1.0], updated_at=datetime.now(UTC) - timedelta(days=3))
    body = client_for().get("/api/v1/status").json()
    assert body["status"] == "degraded"
    assert body["checks"]["warehouse"]["status"] == "ok"
    assert body["checks"]["materialization"]["status"] == "degraded"


def test_status_is_error_when_a_parquet_file_is_corrupt(
    publish: Publish, client_for: ClientFor
) -> None:
    publish(1, [1.0, 2.0], corrupt=True)
    body = client_for().get("/api/v1/status").json()
    assert body["status"] == "error"
    assert body["checks"]["warehouse"] == {"status": "error", "latency_ms": None}


async def _pings_in(ms: float) -> float:
    return ms


async def _fails() -> float:
    raise ConnectionError("store down")


async def _hangs() -> float:
    await anyio.sleep(10)
    return 0.0


@pytest.mark.parametrize(
    ("ping", "critical", "check_status", "overall"),
    [
        (lambda: _pings_in(1.5), True, "ok", "ok"),
        (_fails, True, "error", "error"),
        (_fails, False, "error", "degraded"),
        (_hangs, True, "error", "error"),
    ],
)
def test_an_added_store_check_is_reported_and_decides_the_overall_status(
    publish: Publish,
    client_for: ClientFor,
    ping: Callable[[], object],
    critical: bool,
    check_status: str,
    overall: str,
) -> None:
    publish(1, [1.0])
    check = PingCheck("metering", ping, critical=critical)  # type: ignore[arg-type]
    client = client_for(health_checks=[check], check_timeout_seconds=0.2)
    body = client.get("/api/v1/status").json()
    assert list(body["checks"]) == ["warehouse", "materialization", "metering"]
    assert body["checks"]["metering"]["status"] == check_status
    assert body["status"] == overall
