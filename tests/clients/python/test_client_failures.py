"""Rule: what goes wrong on the client's side (no API there, no key, a refused key, a folder that
does not exist yet) is a typed error whose one-line message names the cause and what to do."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from market_intelligence import (
    ApiUnreachable,
    AsyncClient,
    Client,
    MarketIntelligenceError,
    MissingApiKey,
    Unauthorized,
)

from pipelines.catalog import read_manifest
from tests.api.metering.conftest import free_port
from tests.served import ServedApi

from .conftest import Recorder


def test_an_api_that_is_not_running_is_unreachable_naming_its_url() -> None:
    base = f"http://127.0.0.1:{free_port()}"
    with (
        Client("mi_live_0123456789abcdef", base_url=base) as client,
        pytest.raises(ApiUnreachable) as raised,
    ):
        client.list_symbols("crypto")
    message = str(raised.value)
    assert message.startswith(f"cannot reach the Market Intelligence API at {base} (")
    assert "`mi serve`" in message
    assert "MI_API_URL" in message
    assert "\n" not in message
    assert isinstance(raised.value, MarketIntelligenceError | ConnectionError)


def test_the_async_client_and_bulk_export_are_unreachable_the_same_way(tmp_path: Path) -> None:
    base = f"http://127.0.0.1:{free_port()}"

    async def call() -> None:
        async with AsyncClient("mi_live_0123456789abcdef", base_url=base) as client:
            await client.get_indicators("crypto", "BTC")

    with pytest.raises(ApiUnreachable, match=base):
        asyncio.run(call())
    with (
        Client("mi_live_0123456789abcdef", base_url=base) as client,
        pytest.raises(ApiUnreachable, match=base),
    ):
        client.bulk_export("crypto", "daily-prices", f"{tmp_path}/out/")
    assert list(tmp_path.iterdir()) == []


def test_without_a_key_nothing_is_sent_and_the_error_says_how_to_give_one(
    served_api: ServedApi, recorder: Recorder, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delenv("MI_API_KEY", raising=False)
    http = recorder.sync_http()
    with Client(base_url=served_api.base, http=http) as client:
        with pytest.raises(MissingApiKey, match="set MI_API_KEY"):
            client.list_symbols("crypto")
        with pytest.raises(MissingApiKey):
            client.bulk_export("crypto", "daily-prices", tmp_path)
        assert recorder.exchanges == []
        assert client.status().status  # the one public route needs no key
    http.close()
    assert [exchange.path for exchange in recorder.exchanges] == ["/api/v1/status"]


def test_a_refused_key_is_unauthorized_saying_the_key_is_the_problem(
    served_api: ServedApi,
) -> None:
    with (
        Client("mi_live_notakeyatall00", base_url=served_api.base) as client,
        pytest.raises(Unauthorized) as raised,
    ):
        client.ping()
    assert raised.value.message == "unauthorized"
    assert "does not accept this API key" in str(raised.value)
    assert "MI_API_KEY" in str(raised.value)


@pytest.mark.parametrize("exists", [False, True], ids=["new-folder", "existing-folder"])
def test_a_trailing_slash_or_an_existing_folder_means_a_folder(
    served_api: ServedApi, embedded_market: Path, internal_key: str, tmp_path: Path, exists: bool
) -> None:
    folder = tmp_path / "exports"
    if exists:
        folder.mkdir()
    destination = str(folder) if exists else f"{folder}/"
    manifest = read_manifest(embedded_market / "warehouse")
    assert manifest is not None
    with Client(internal_key, base_url=served_api.base) as client:
        saved = client.bulk_export("forex", "sentiment-daily", destination, format="csv")
    assert saved == folder / f"forex-sentiment-daily-{manifest.version}.csv"
    assert list(folder.iterdir()) == [saved]
    assert saved.read_text().startswith('"market","symbol","date"')


def test_a_refused_export_into_a_new_folder_creates_no_folder(
    served_api: ServedApi, tmp_path: Path
) -> None:
    with (
        Client(served_api.new_key("sandbox"), base_url=served_api.base) as sandbox,
        pytest.raises(MarketIntelligenceError),
    ):
        sandbox.bulk_export("crypto", "briefs", f"{tmp_path}/exports/")
    assert list(tmp_path.iterdir()) == []
