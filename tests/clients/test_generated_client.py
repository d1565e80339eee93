"""Rule: a client generated from the served OpenAPI document builds and calls the API.

openapi-python-client (from the registry, a dev dependency) generates a package from a real
`mi serve`'s /schema/openapi.json; the test imports it and calls three routes with an API key:
the methods are named as the spec names the routes, and each answers what the API answers."""

from __future__ import annotations

import importlib
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.served import ServedApi

pytestmark = pytest.mark.slow

GENERATOR = str(Path(sys.executable).with_name("openapi-python-client"))
PACKAGE = "market_intelligence_api_client"


@pytest.fixture
def generated(served_api: ServedApi, tmp_path: Path) -> Iterator[Any]:
    document = tmp_path / "openapi.json"
    document.write_bytes(httpx.get(f"{served_api.base}/schema/openapi.json", timeout=30).content)
    out = tmp_path / "client"
    done = subprocess.run(
        [GENERATOR, "generate", "--path", str(document), "--output-path", str(out)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Warning" not in done.stdout, done.stdout  # every schema and operation understood
    sys.path.insert(0, str(out))
    try:
        yield importlib.import_module(PACKAGE)
    finally:
        sys.path.remove(str(out))
        for name in [m for m in sys.modules if m.startswith(PACKAGE)]:
            del sys.modules[name]


def test_a_generated_client_calls_three_routes_named_as_the_spec_names_them(
    generated: Any, served_api: ServedApi
) -> None:
    key = served_api.new_key("internal")
    prices = importlib.import_module(f"{PACKAGE}.api.technical_analysis.get_price_history")
    symbols = importlib.import_module(f"{PACKAGE}.api.instruments.list_symbols")
    action = importlib.import_module(f"{PACKAGE}.api.trades.get_current_action")
    models = importlib.import_module(f"{PACKAGE}.models")
    direct = httpx.Client(base_url=served_api.base, headers={"Authorization": f"Bearer {key}"})
    with generated.AuthenticatedClient(base_url=served_api.base, token=key) as client:
        history = prices.sync(models.GetPriceHistoryMarket("crypto"), "BTC", client=client, limit=5)
        assert isinstance(history, models.PriceHistory)
        expected = direct.get(
            "/api/v2/crypto/technical-analysis/get-price-history/BTC", params={"limit": 5}
        ).json()
        assert history.to_dict() == expected

        listed = symbols.sync(models.ListSymbolsMarket("stocks"), client=client, limit=3)
        assert (
            listed.to_dict()
            == direct.get("/api/v2/stocks/instruments/list-symbols", params={"limit": 3}).json()
        )

        current = action.sync("ETH", models.GetCurrentActionStrategy("conservative"), client=client)
        assert (
            current.to_dict()
            == direct.get("/api/v2/crypto/trades/get-current-action/ETH/conservative").json()
        )
        assert current.action in ("Buy", "Sell", "Hold", "Stay")
    direct.close()
