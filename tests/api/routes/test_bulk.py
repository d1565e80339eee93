"""Bulk export through the real server (`mi serve` on the embedded market, metered): each file read
back with Polars and DuckDB equals `SELECT * FROM <table>` with the same filters; errors, cost, 402, 304."""

from __future__ import annotations

import io
import math
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import duckdb
import httpx
import polars as pl
import pyarrow as pa
import pytest
from polars.testing import assert_frame_equal

from api.export import DATASETS, Dataset
from api.metering.config import DEFAULT_CONFIG_PATH
from pipelines.catalog import read_manifest
from tests.served import ServedApi, clean_env, serving

pytestmark = pytest.mark.slow

BULK = "/api/v2/{market}/bulk/{dataset}"
ROWS_PER_TOKEN = 100
"""The priced server's row cost, so that the embedded market's datasets cost above the minimum."""
PRICED_PLANS = """
[plans.tiny]
limited = false
monthly_budget = 1_000
daily_cap = 40
markets = ["crypto", "forex", "commodities", "stocks"]
"""


def url(api: ServedApi, market: str, dataset: str) -> str:
    return api.base + BULK.format(market=market, dataset=dataset)


def get(api: ServedApi, key: str, market: str, dataset: str, **query: str) -> httpx.Response:
    headers = {"Authorization": f"Bearer {key}"}
    return httpx.get(url(api, market, dataset), params=query, headers=headers, timeout=60)


@pytest.fixture(scope="module")
def warehouse(embedded_market: Path) -> Iterator[duckdb.DuckDBPyConnection]:
    """The pipeline's own DuckDB database over the warehouse the server serves."""
    with duckdb.connect(str(embedded_market / "warehouse.duckdb"), read_only=True) as con:
        yield con


@pytest.fixture(scope="module")
def quant_key(served_api: ServedApi) -> str:
    return served_api.new_key("quant")


def expected(
    warehouse: duckdb.DuckDBPyConnection, dataset: Dataset, where: str, params: list[Any]
) -> pl.DataFrame:
    """`SELECT * FROM <table>` with the filters, in the key's order (daily prices: its view of the
    split-adjusted series, the dataset's default)."""
    table = "daily_prices_split" if dataset.adjustable else dataset.table.name
    sql = f"SELECT * FROM {table} WHERE {where}"
    return warehouse.sql(sql, params=params).pl().sort(dataset.table.key)


def from_csv(body: bytes, dataset: Dataset) -> pl.DataFrame:
    """A CSV as Polars reads it with the catalog's types; list columns are JSON arrays."""
    schema = dataset.table.schema
    lists = [name for name, dtype in schema.items() if dtype.is_nested()]
    frame = pl.read_csv(
        io.BytesIO(body), schema={n: pl.String if n in lists else t for n, t in schema.items()}
    )
    return frame.with_columns(pl.col(n).str.json_decode(schema[n]) for n in lists)


def read_back(body: bytes, fmt: str, dataset: Dataset, scratch: Path) -> list[pl.DataFrame]:
    """The file as Polars reads it, and (parquet, arrow) as DuckDB reads it, each in key order."""
    key = dataset.table.key
    if fmt == "csv":
        return [from_csv(body, dataset).sort(key)]
    if fmt == "arrow":
        by_duckdb = duckdb.from_arrow(pa.ipc.open_stream(body).read_all()).pl()
        return [pl.read_ipc_stream(io.BytesIO(body)).sort(key), by_duckdb.sort(key)]
    (scratch / "export.parquet").write_bytes(body)
    with duckdb.connect() as con:
        by_duckdb = con.sql(
            "SELECT * FROM read_parquet(?)", params=[str(scratch / "export.parquet")]
        ).pl()
    return [pl.read_parquet(io.BytesIO(body)).sort(key), by_duckdb.sort(key)]


EMPTY_ON_THE_EMBEDDED_MARKET = {"corporate-actions"}
"""Datasets the tests' embedded market leaves empty: it reports no corporate actions yet (its
actions file is issue 51's next part); the file must still read back as the table's schema."""


@pytest.mark.parametrize("fmt", ["parquet", "arrow", "csv"])
@pytest.mark.parametrize("name", list(DATASETS))
def test_every_dataset_in_every_format_reads_back_as_the_warehouse_table(
    served_api: ServedApi,
    quant_key: str,
    warehouse: duckdb.DuckDBPyConnection,
    tmp_path: Path,
    name: str,
    fmt: str,
) -> None:
    """decisions.md: a file read with Polars or DuckDB equals SELECT ... FROM <table>: the same
    columns, in the catalog's order and types, and the same rows."""
    dataset = DATASETS[name]
    market = "stocks" if name != "backtest-summaries" else "crypto"
    response = get(served_api, quant_key, market, name, format=fmt)
    assert response.status_code == 200, response.text
    want = expected(warehouse, dataset, "market = ?", [market])
    assert (want.height == 0) == (name in EMPTY_ON_THE_EMBEDDED_MARKET)
    for got in read_back(response.content, fmt, dataset, tmp_path):
        assert got.schema == dataset.table.schema
        assert_frame_equal(got, want)


FILTERS = [
    ("daily-prices", {"from": "2025-06-01", "to": "2025-06-30"}, "date BETWEEN ? AND ?", ["2025-06-01", "2025-06-30"]),
    ("daily-prices", {"symbols": "msft,AAPL"}, "list_contains(?, symbol)", [["AAPL", "MSFT"]]),
    ("trend-segments", {"from": "2025-01-01", "symbols": "NVDA"}, "started_on >= ? AND symbol = ?", ["2025-01-01", "NVDA"]),
    ("backtest-trades", {"to": "2024-12-31"}, "start_date <= ?", ["2024-12-31"]),
    ("briefs", {"symbols": "AAPL", "from": "2026-02-20"}, "list_contains(symbols, ?) AND date >= ?", ["AAPL", "2026-02-20"]),
    ("sentiment-daily", {"from": "2026-03-01", "to": "2026-03-01"}, "date = ?", ["2026-03-01"]),
]  # fmt: skip


@pytest.mark.parametrize(("name", "query", "where", "params"), FILTERS)
def test_from_to_and_symbols_select_the_rows_the_same_sql_filter_selects(
    served_api: ServedApi,
    quant_key: str,
    warehouse: duckdb.DuckDBPyConnection,
    name: str,
    query: dict[str, str],
    where: str,
    params: list[Any],
) -> None:
    """`from`/`to` are inclusive on the dataset's date column; `symbols` names symbols in any case
    (briefs: a brief naming any of them)."""
    dataset = DATASETS[name]
    response = get(served_api, quant_key, "stocks", name, **query)
    assert response.status_code == 200, response.text
    want = expected(warehouse, dataset, f"market = 'stocks' AND {where}", params)
    everything = expected(warehouse, dataset, "market = 'stocks'", [])
    assert 0 < want.height < everything.height
    assert_frame_equal(pl.read_parquet(io.BytesIO(response.content)).sort(dataset.table.key), want)


@pytest.mark.parametrize(
    ("adjustment", "view"),
    [("split", "daily_prices_split"), ("all", "daily_prices_all"), ("raw", "daily_prices")],
)
def test_daily_prices_come_adjusted_as_the_warehouse_view_of_that_adjustment(
    served_api: ServedApi,
    quant_key: str,
    warehouse: duckdb.DuckDBPyConnection,
    adjustment: str,
    view: str,
) -> None:
    """decisions.md, Corporate actions: bulk `daily-prices` takes `adjustment` as
    get-price-history does; each file equals the analysts' view of that series."""
    dataset = DATASETS["daily-prices"]
    response = get(served_api, quant_key, "stocks", "daily-prices", adjustment=adjustment)
    assert response.status_code == 200, response.text
    sql = f"SELECT * FROM {view} WHERE market = 'stocks'"
    want = warehouse.sql(sql).pl().sort(dataset.table.key)
    assert_frame_equal(pl.read_parquet(io.BytesIO(response.content)).sort(dataset.table.key), want)


def test_the_file_is_named_for_market_dataset_and_data_version(
    served_api: ServedApi, quant_key: str, embedded_market: Path
) -> None:
    manifest = read_manifest(embedded_market / "warehouse")
    assert manifest is not None
    response = get(served_api, quant_key, "FOREX", "Trend-History", format="csv")
    assert response.headers["content-type"].startswith("text/csv")
    assert response.headers["content-disposition"] == (
        f'attachment; filename="forex-trend-history-{manifest.version}.csv"'
    )


ERRORS = [
    ("crypto", "prices", {}, 404, 1, "datasets: daily-prices"),
    ("bonds", "daily-prices", {}, 404, 1, "Unknown market"),
    ("crypto", "daily-prices", {"format": "xlsx"}, 400, 10, "formats: parquet, arrow, csv"),
    ("crypto", "daily-prices", {"from": "2026-3-1"}, 422, 1, "'from'"),
    ("crypto", "daily-prices", {"to": "2026-02-30"}, 422, 1, "'to'"),
    ("crypto", "daily-prices", {"from": "2026-03-02", "to": "2026-03-01"}, 422, 1, "'from'"),
    ("crypto", "daily-prices", {"symbols": "BTC,NOPE"}, 404, 1, "NOPE"),
    ("crypto", "daily-prices", {"adjustment": "total"}, 422, 1, "'adjustment'"),
    ("crypto", "briefs", {"adjustment": "raw"}, 422, 1, "'adjustment'"),
]  # fmt: skip


@pytest.mark.parametrize(("market", "name", "query", "status", "cost", "says"), ERRORS)
def test_each_error_answers_its_status_envelope_and_cost(
    served_api: ServedApi,
    quant_key: str,
    market: str,
    name: str,
    query: dict[str, str],
    status: int,
    cost: int,
    says: str,
) -> None:
    """decisions.md: unknown dataset 404, unknown format 400 (charged as the route: its minimum),
    malformed date 422 (1 token); an unknown symbol 404 as on every `{symbol}` route."""
    response = get(served_api, quant_key, market, name, **query)
    assert response.status_code == status
    assert says in response.json()["error"]
    assert int(response.headers["x-tokens-cost"]) == cost


def test_sandbox_answers_402_at_no_cost(served_api: ServedApi) -> None:
    response = get(served_api, served_api.new_key("sandbox"), "crypto", "daily-prices")
    assert response.status_code == 402
    assert response.json() == {
        "success": False,
        "message": "your plan (sandbox) does not include bulk-export",
    }
    assert response.headers["x-tokens-cost"] == "0"


def test_a_repeated_export_with_its_etag_is_a_free_304(served_api: ServedApi) -> None:
    key = served_api.new_key("pro")
    first = get(served_api, key, "crypto", "daily-prices", symbols="BTC")
    assert first.headers["x-tokens-cost"] == "10"
    again = httpx.get(
        url(served_api, "crypto", "daily-prices"),
        params={"symbols": "btc"},  # the same selection, spelled otherwise: the same ETag
        headers={"Authorization": f"Bearer {key}", "If-None-Match": first.headers["etag"]},
    )
    assert again.status_code == 304
    assert again.content == b""
    assert again.headers["x-tokens-cost"] == "0"
    assert again.headers["x-tokens-remaining"] == first.headers["x-tokens-remaining"]
    other = get(served_api, key, "crypto", "daily-prices", symbols="ETH")
    assert other.headers["etag"] != first.headers["etag"]


@pytest.fixture(scope="module")
def priced_api(embedded_market: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServedApi]:  # fmt: skip
    """The embedded market served with bulk export at 1 token per 100 rows and a `tiny` plan."""
    scratch = tmp_path_factory.mktemp("bulk-priced")
    text = re.sub(
        r"(?m)^rows_per_token = .*$",
        f"rows_per_token = {ROWS_PER_TOKEN}",
        DEFAULT_CONFIG_PATH.read_text(),
    )
    (scratch / "metering.toml").write_text(text + PRICED_PLANS)
    env = clean_env(
        embedded_market,
        MI_METERING_CONFIG=str(scratch / "metering.toml"),
        MI_METERING_URL=f"sqlite://{scratch / 'metering.sqlite3'}",
    )
    with serving(env, scratch / "serve.log") as served:
        yield served


def test_the_cost_is_counted_from_the_exact_rows_of_the_file(
    priced_api: ServedApi, warehouse: duckdb.DuckDBPyConnection
) -> None:
    """1 token per ROWS_PER_TOKEN rows, rounded up, at least 10, from the rows the file holds."""
    key = priced_api.new_key("quant")
    response = get(priced_api, key, "crypto", "daily-prices", symbols="BTC,ETH", to="2025-12-31")
    rows = pl.read_parquet(io.BytesIO(response.content)).height
    assert rows > 10 * ROWS_PER_TOKEN
    assert int(response.headers["x-tokens-cost"]) == math.ceil(rows / ROWS_PER_TOKEN)
    assert int(response.headers["x-tokens-remaining"]) == 250_000 - math.ceil(rows / ROWS_PER_TOKEN)


def test_an_export_that_does_not_fit_the_balance_is_the_token_limit_401_and_costs_nothing(
    priced_api: ServedApi, warehouse: duckdb.DuckDBPyConnection
) -> None:
    """The whole cost fits or nothing is charged: a file of more than 40 tokens on a 40-token day
    is refused before a byte of it is sent; a smaller one is then served."""
    [(rows,)] = warehouse.execute(
        "SELECT count(*) FROM daily_prices WHERE market = 'crypto'"
    ).fetchall()
    assert math.ceil(rows / ROWS_PER_TOKEN) > 40
    key = priced_api.new_key("tiny")
    refused = get(priced_api, key, "crypto", "daily-prices")
    assert refused.status_code == 401
    assert refused.json()["error_code"] == "DAILY_TOKEN_LIMIT"
    assert (refused.headers["x-tokens-cost"], refused.headers["x-tokens-remaining-today"]) == (
        "0",
        "40",
    )
    served = get(priced_api, key, "crypto", "daily-prices", symbols="BTC", to="2023-12-31")
    assert served.status_code == 200
    assert served.headers["x-tokens-remaining-today"] == str(
        40 - int(served.headers["x-tokens-cost"])
    )
