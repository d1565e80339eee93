"""The whole product on object storage: `mi materialize` writes an s3:// warehouse (moto's S3 server on
a loopback port), the API configured with the same MI_WAREHOUSE_URL serves it, and a second
materialization reaches the running API without a restart.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from litestar.testing import TestClient

from api.app import create_app
from api.settings import load_settings
from pipelines.catalog import DAILY_PRICES, INSTRUMENTS, S3Location, read_partitions
from tests.s3 import moto_endpoint, new_bucket

pytestmark = pytest.mark.slow

FIRST_END = "2026-06-30"
SECOND_END = "2026-07-07"
MI = str(Path(sys.executable).with_name("mi"))


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    """The one configuration the pipeline and the API share, the warehouse materialized once."""
    with moto_endpoint() as endpoint:
        env = {
            "MI_DATA_DIR": str(tmp_path_factory.mktemp("product-s3")),
            "MI_WAREHOUSE_URL": f"s3://{new_bucket(endpoint)}/warehouse",
            "MI_S3_ENDPOINT_URL": endpoint,
            "MI_INSTRUMENTS": "8",
            "MI_MANIFEST_POLL_SECONDS": "0.2",
        }
        materialize(env, FIRST_END)
        yield env


def materialize(env: dict[str, str], end: str, *select: str) -> None:
    selection = ["--select", ",".join(select)] if select else []
    subprocess.run(
        [MI, "materialize", "--market", "crypto", *selection],
        env={**os.environ, **env, "MI_END_DATE": end},
        check=True,
        capture_output=True,
    )


@pytest.fixture(scope="module")
def client(env: dict[str, str]) -> Iterator[TestClient[Any]]:
    with TestClient(create_app(load_settings(env))) as test_client:
        yield test_client


def get(client: TestClient[Any], path: str) -> Any:
    response = client.get(path)
    assert response.status_code == 200, (path, response.text)
    return response.json()


def stored(env: dict[str, str]) -> S3Location:
    location = load_settings(env).warehouse
    assert isinstance(location, S3Location)
    return location


def test_nothing_is_written_locally(env: dict[str, str]) -> None:
    data = Path(env["MI_DATA_DIR"])
    assert not (data / "warehouse").exists()
    assert not (data / "warehouse.duckdb").exists()


def test_the_api_serves_the_materialized_s3_warehouse(
    env: dict[str, str], client: TestClient[Any]
) -> None:
    instruments = read_partitions(stored(env), INSTRUMENTS, ["crypto"])
    body = get(client, "/api/v2/crypto/instruments/list-symbols")
    assert body == {"symbols": sorted(instruments["symbol"].to_list())}
    prices = read_partitions(stored(env), DAILY_PRICES, ["crypto"]).filter(symbol="BTC")
    history = get(client, "/api/v2/crypto/technical-analysis/get-price-history/BTC")
    served = [(p["timestamp"], p["price"]) for p in history["price_history"]]
    assert served == list(zip(prices["timestamp"], prices["close"], strict=True))
    assert history["price_history"][-1]["date"] == FIRST_END
    card = get(client, "/api/v2/crypto/instruments/scorecard/BTC")
    assert card["symbol"] == "BTC"
    assert card["trend"] in {"up", "down", "neutral"}  # the simulator read trend_segments from S3
    assert get(client, "/api/v2/crypto/newsroom/get-market-summary")["date"] == FIRST_END
    assert client.get("/api/v1/status").status_code == 200


def test_a_new_materialization_reaches_the_running_api(
    env: dict[str, str], client: TestClient[Any]
) -> None:
    before = stored(env).read_manifest()
    assert before is not None
    materialize(env, SECOND_END, "embedded_market_prices", "daily_prices")
    after = stored(env).read_manifest()
    assert after is not None
    assert after.version > before.version
    deadline = time.monotonic() + 10
    path = "/api/v2/crypto/technical-analysis/get-price-history/BTC"
    while get(client, path)["price_history"][-1]["date"] != SECOND_END:
        assert time.monotonic() < deadline, "the API never served the new version"
        time.sleep(0.1)
    assert client.get("/api/v1/status").status_code == 200
