"""Rule (decisions.md, "Point in time"): `as_of` answers as the API did then. A past data version
that has no table a route reads (it predates the table) will never have it: the answer is a 404
naming the table and the version, not the 503 and `Retry-After` of a table still to come, which
would send a client retrying for ever."""

from __future__ import annotations

from collections.abc import Callable

import polars as pl
from litestar import Litestar
from litestar.testing import TestClient

from api.settings import ApiSettings
from pipelines.catalog import DAILY_PRICES, PRICE_DAYS
from pipelines.warehouse.store import Warehouse
from tests.api.conftest import price_frame

STATUS = "/api/v2/crypto/data-status"


def test_a_table_a_past_version_lacks_is_a_404_naming_it_not_a_503(
    settings: ApiSettings, client_for: Callable[..., TestClient[Litestar]]
) -> None:
    warehouse = Warehouse(settings.warehouse_dir)
    before = warehouse.write(DAILY_PRICES, "crypto", price_frame([1.0, 2.0])).version
    empty_days = pl.DataFrame(schema=PRICE_DAYS.schema)
    warehouse.write(PRICE_DAYS, "crypto", PRICE_DAYS.conform(empty_days))
    client = client_for()

    assert client.get(STATUS).status_code == 200
    past = client.get(STATUS, params={"as_of": str(before)})
    assert past.status_code == 404
    assert "Retry-After" not in past.headers
    assert past.json()["error"] == (
        f"price_days data was not recorded in data version {before}, the one as_of names"
    )


def test_a_table_the_current_version_lacks_is_still_a_503_to_retry(
    settings: ApiSettings, client_for: Callable[..., TestClient[Litestar]]
) -> None:
    """Without `as_of` (or with one naming the current version) the table may yet come."""
    warehouse = Warehouse(settings.warehouse_dir)
    current = warehouse.write(DAILY_PRICES, "crypto", price_frame([1.0])).version
    client = client_for()
    for params in ({}, {"as_of": str(current)}):
        answer = client.get(STATUS, params=params)
        assert answer.status_code == 503
        assert answer.headers["Retry-After"]
        assert answer.json()["error"] == "price_days data is not available yet; retry later"
