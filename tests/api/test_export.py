"""Bulk export files are written batch by batch: a large table never leaves as one object."""

from __future__ import annotations

import io
from collections.abc import Callable

import polars as pl
import pytest
from litestar import Litestar
from litestar.testing import TestClient
from polars.testing import assert_frame_equal

from api.export import DATASETS, FORMATS, Selection, encoded, export_sql
from api.settings import ApiSettings
from api.warehouse import DuckDBWarehouseReader
from tests.api.conftest import Publish, price_frame

ClientFor = Callable[..., TestClient[Litestar]]

BATCH = 1_000
ROWS = 3 * BATCH + 123


def read(body: bytes, fmt: str) -> pl.DataFrame:
    if fmt == "parquet":
        return pl.read_parquet(io.BytesIO(body))
    if fmt == "arrow":
        return pl.read_ipc_stream(io.BytesIO(body))
    return pl.read_csv(io.BytesIO(body), schema=DATASETS["daily-prices"].table.schema)


@pytest.mark.parametrize("fmt", list(FORMATS))
def test_a_table_larger_than_a_batch_is_encoded_in_chunks_of_at_most_a_batch(
    publish: Publish, settings: ApiSettings, fmt: str
) -> None:
    """Each batch of rows is written and handed on before the next is read: a 5,000-symbol
    market's prices stream through a batch's worth of memory, never built whole."""
    publish(1, [float(i % 997) for i in range(ROWS)])
    reader = DuckDBWarehouseReader(settings.warehouse_dir)
    reader.refresh()
    snapshot = reader.current()
    assert snapshot is not None
    export = encoded(snapshot, DATASETS["daily-prices"], Selection("crypto"), FORMATS[fmt], BATCH)
    chunks = list(export)
    assert len(chunks) >= ROWS // BATCH
    body = b"".join(chunks)
    assert max(len(chunk) for chunk in chunks) < len(body) / 2
    assert_frame_equal(read(body, fmt), price_frame([float(i % 997) for i in range(ROWS)]))


def test_csv_writes_list_columns_as_json_arrays() -> None:
    sql, _ = export_sql(DATASETS["briefs"], Selection("crypto"), FORMATS["csv"])
    assert 'to_json("symbols") AS "symbols"' in sql
    assert 'to_json("impacted_coins") AS "impacted_coins"' in sql
    parquet, _ = export_sql(DATASETS["briefs"], Selection("crypto"), FORMATS["parquet"])
    assert "to_json" not in parquet


def test_the_route_without_metering_answers_the_file_named_for_market_dataset_and_version(
    publish: Publish, client_for: ClientFor
) -> None:
    publish(7, [1.0, 2.0, 3.0])
    response = client_for().get("/api/v2/crypto/bulk/daily-prices?format=arrow")
    assert response.status_code == 200
    assert response.headers["content-type"] == "application/vnd.apache.arrow.stream"
    disposition = response.headers["content-disposition"]
    assert disposition == 'attachment; filename="crypto-daily-prices-7.arrows"'
    assert_frame_equal(read(response.content, "arrow"), price_frame([1.0, 2.0, 3.0]))
