"""The DuckDB reader serves one manifest version per snapshot and swaps versions atomically."""

from __future__ import annotations

import gc
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import polars as pl
import pytest
from litestar import Litestar, get
from litestar.di import NamedDependency
from litestar.testing import TestClient

from api.settings import ApiSettings
from api.warehouse import DuckDBWarehouseReader, WarehouseSnapshot, WarehouseUnavailable
from pipelines.catalog import (
    DAILY_PRICES,
    INSTRUMENTS,
    TABLES,
    read_manifest,
    write_manifest,
)
from pipelines.warehouse.store import Warehouse
from tests.api.conftest import Publish, price_frame

ClientFor = Callable[..., TestClient[Litestar]]
CLOSES = "SELECT close FROM daily_prices ORDER BY date"


@pytest.fixture
def reader(settings: ApiSettings) -> DuckDBWarehouseReader:
    """A reader over the test warehouse, not yet loaded."""
    return DuckDBWarehouseReader(settings.warehouse_dir)


def closes(snapshot: WarehouseSnapshot | None) -> list[float]:
    assert snapshot is not None
    return snapshot.query(CLOSES)["close"].to_list()


def test_a_snapshot_reads_the_manifest_files_with_parameters(
    publish: Publish, reader: DuckDBWarehouseReader
) -> None:
    publish(1, [10.0, 20.0, 30.0])
    assert reader.refresh() is True
    snapshot = reader.current()
    assert snapshot is not None
    assert snapshot.version == reader.data_version == 1
    frame = snapshot.query("SELECT close FROM daily_prices WHERE close > ? ORDER BY date", [15.0])
    assert frame["close"].to_list() == [20.0, 30.0]
    named = snapshot.query("SELECT count(*) AS n FROM daily_prices WHERE symbol = $s", {"s": "BTC"})
    assert named["n"].item() == 3


def test_record_batches_stream_a_result_through_other_queries_of_the_same_thread(
    publish: Publish, reader: DuckDBWarehouseReader
) -> None:
    """A bulk export reads batch by batch while requests on that thread query the snapshot."""
    publish(1, [float(i) for i in range(1, 11)])
    reader.refresh()
    snapshot = reader.current()
    assert snapshot is not None
    batches = snapshot.record_batches(
        "SELECT close FROM daily_prices WHERE close > ?", [2.0], batch_rows=3
    )
    first = batches.read_next_batch()
    assert closes(snapshot) == [float(i) for i in range(1, 11)]  # the thread's cursor, meanwhile
    rest = [value for batch in batches for value in batch.column("close").to_pylist()]
    assert first.num_rows <= 3
    assert sorted([*first.column("close").to_pylist(), *rest]) == [float(i) for i in range(3, 11)]


def test_tables_the_manifest_does_not_list_are_empty_with_the_catalog_schema(
    publish: Publish, reader: DuckDBWarehouseReader
) -> None:
    publish(1, [1.0])
    reader.refresh()
    snapshot = reader.current()
    assert snapshot is not None
    frame = snapshot.query("SELECT * FROM instruments")
    assert frame.is_empty()
    assert frame.columns == INSTRUMENTS.column_names
    prices = snapshot.query("SELECT * FROM daily_prices")
    assert prices.schema == DAILY_PRICES.schema


def test_a_snapshot_keeps_reading_its_version_after_a_new_one_lands(
    publish: Publish, reader: DuckDBWarehouseReader
) -> None:
    publish(1, [1.0, 2.0])
    reader.refresh()
    held = reader.current()
    publish(2, [5.0, 6.0, 7.0])
    assert reader.refresh() is True
    assert closes(held) == [1.0, 2.0]
    assert closes(reader.current()) == [5.0, 6.0, 7.0]
    assert reader.data_version == 2


def test_refresh_is_a_no_op_while_the_manifest_is_unchanged(
    publish: Publish, reader: DuckDBWarehouseReader
) -> None:
    publish(1, [1.0])
    assert reader.refresh() is True
    first = reader.current()
    assert reader.refresh() is False
    assert reader.current() is first


def test_an_unreadable_version_is_not_swapped_in_and_is_reported(
    publish: Publish, reader: DuckDBWarehouseReader
) -> None:
    publish(1, [1.0, 2.0])
    reader.refresh()
    publish(2, [3.0], corrupt=True)
    assert reader.refresh() is False
    assert reader.data_version == 1
    assert closes(reader.current()) == [1.0, 2.0]
    assert reader.failure is not None
    assert "version 2" in reader.failure
    with pytest.raises(WarehouseUnavailable):
        reader.probe()
    publish(3, [4.0])
    assert reader.refresh() is True
    assert reader.failure is None
    reader.probe()


def test_a_file_with_other_row_counts_than_the_manifest_is_refused(
    publish: Publish, reader: DuckDBWarehouseReader, settings: ApiSettings
) -> None:
    manifest = publish(1, [1.0, 2.0])
    DAILY_PRICES.empty().write_parquet(settings.warehouse_dir / manifest.files("daily_prices")[0])
    reader.refresh()
    assert reader.current() is None
    assert reader.failure is not None
    assert "manifest says 2" in reader.failure


def test_no_manifest_means_no_snapshot_and_a_failing_probe(reader: DuckDBWarehouseReader) -> None:
    reader.refresh()
    assert reader.current() is None
    assert reader.data_version is None
    with pytest.raises(WarehouseUnavailable, match="not been materialized"):
        reader.probe()


def test_threads_query_one_snapshot_concurrently_through_their_own_cursors(
    publish: Publish, reader: DuckDBWarehouseReader
) -> None:
    publish(1, [float(i) for i in range(100)])
    reader.refresh()
    snapshot = reader.current()
    assert snapshot is not None

    def total(_: int) -> float:
        return float(snapshot.query("SELECT sum(close) AS s FROM daily_prices")["s"].item())

    with ThreadPoolExecutor(max_workers=8) as pool:
        assert set(pool.map(total, range(200))) == {4950.0}


@get("/test/version", sync_to_thread=False)
def version_route(snapshot: NamedDependency[WarehouseSnapshot]) -> dict[str, object]:
    frame: pl.DataFrame = snapshot.query(CLOSES)
    return {"version": snapshot.version, "closes": frame["close"].to_list()}


def test_a_new_request_sees_a_new_version_without_restart(
    publish: Publish, client_for: ClientFor
) -> None:
    publish(1, [1.0])
    client = client_for(version_route)
    assert client.get("/test/version").json() == {"version": 1, "closes": [1.0]}
    publish(2, [2.0, 3.0])
    deadline = time.monotonic() + 5
    while client.get("/test/version").json()["version"] != 2:
        assert time.monotonic() < deadline, "the watcher never loaded version 2"
        time.sleep(0.02)
    assert client.get("/test/version").json() == {"version": 2, "closes": [2.0, 3.0]}


def test_data_routes_answer_503_before_the_first_materialization(client_for: ClientFor) -> None:
    response = client_for(version_route).get("/test/version")
    assert response.status_code == 503
    assert response.json() == {"error": "the warehouse has not been materialized yet"}
    assert int(response.headers["retry-after"]) > 0


def test_the_manifest_written_by_the_catalog_round_trips(
    publish: Publish, settings: ApiSettings
) -> None:
    written = publish(4, [1.0])
    write_manifest(settings.warehouse_dir, written)
    assert read_manifest(settings.warehouse_dir) == written


def fileset_views(reader: DuckDBWarehouseReader) -> set[str]:
    snapshot = reader.current()
    assert snapshot is not None
    found = snapshot.query(
        "SELECT view_name FROM duckdb_views() WHERE schema_name = 'main' AND NOT internal"
    )
    return set(found["view_name"].to_list())


def schemas(reader: DuckDBWarehouseReader) -> set[str]:
    snapshot = reader.current()
    assert snapshot is not None
    found = snapshot.query("SELECT schema_name FROM duckdb_schemas() WHERE schema_name LIKE 'v%'")
    return set(found["schema_name"].to_list())


def test_a_new_version_builds_views_only_for_the_tables_whose_files_changed(
    settings: ApiSettings,
) -> None:
    """Rule: versions share the views of unchanged tables; a retired version's views and schema
    are dropped by a later swap once no request holds it."""
    warehouse = Warehouse(settings.data_dir / "warehouse")
    warehouse.write(DAILY_PRICES, "crypto", price_frame([1.0, 2.0]))
    reader = DuckDBWarehouseReader(settings.data_dir / "warehouse")
    reader.refresh()
    first = fileset_views(reader)
    assert len(first) == len(TABLES)
    held = reader.current()
    warehouse.write(INSTRUMENTS, "crypto", INSTRUMENTS.empty())
    reader.refresh()
    second = fileset_views(reader)
    assert len(second - first) == 1  # instruments' new files: one new view, the rest shared
    assert [v for v in second - first if v.startswith("instruments#")]
    assert closes(held) == [1.0, 2.0]  # the held version still reads its views
    del held
    gc.collect()
    warehouse.write(DAILY_PRICES, "crypto", price_frame([3.0]))
    reader.refresh()  # drops the first version's schema and the views only it used
    assert len(schemas(reader)) == 2
    assert len(fileset_views(reader)) == len(TABLES) + 1
    assert closes(reader.current()) == [3.0]
    reader.close()


def test_past_versions_open_on_demand_and_at_most_the_bound_stay_open(
    settings: ApiSettings,
) -> None:
    """Rule (issue 50): the reader opens a retained past version from its record and keeps a
    bounded set open, least recently used closed first; the current one is untouched."""
    warehouse = Warehouse(settings.warehouse_dir)
    versions = [
        warehouse.write(DAILY_PRICES, "crypto", price_frame([float(n)] * 3)).version
        for n in range(1, 6)
    ]
    reader = DuckDBWarehouseReader(settings.warehouse_dir, past_versions=2)
    reader.refresh()
    assert closes(reader.current()) == [5.0] * 3
    assert reader.past(versions[0]) is None  # nothing opened yet: no I/O on the event loop
    for number, version in enumerate(versions[:4], start=1):
        assert closes(reader.open_past(version)) == [float(number)] * 3
    assert reader.past(versions[0]) is None  # evicted: two stay open
    assert reader.past(versions[1]) is None
    held = reader.past(versions[2])
    assert held is not None
    assert reader.past(versions[3]) is not None
    assert held.version == versions[2]
    assert held.published.endswith("Z")
    assert reader.changes(versions[2]) == {"crypto": ["daily_prices"]}
    assert closes(reader.current()) == [5.0] * 3
    reader.close()


def test_a_past_version_without_a_record_is_unavailable(settings: ApiSettings) -> None:
    warehouse = Warehouse(settings.warehouse_dir)
    warehouse.write(DAILY_PRICES, "crypto", price_frame([1.0]))
    reader = DuckDBWarehouseReader(settings.warehouse_dir)
    with pytest.raises(WarehouseUnavailable, match="no record"):
        reader.open_past(12345)


def test_a_past_version_creates_a_tables_view_only_when_a_query_names_it(
    settings: ApiSettings,
) -> None:
    """A past version is asked for one route's tables: its views are made on first use, and a
    table no query named costs nothing (binding a view reads its files' metadata)."""
    warehouse = Warehouse(settings.warehouse_dir)
    old = warehouse.write(DAILY_PRICES, "crypto", price_frame([1.0, 2.0])).version
    warehouse.write(INSTRUMENTS, "crypto", pl.DataFrame({"market": ["crypto"], "symbol": ["BTC"], "name": ["bitcoin"], "logo": ["x"], "source": ["t"]}))  # fmt: skip
    warehouse.write(DAILY_PRICES, "crypto", price_frame([3.0]))
    reader = DuckDBWarehouseReader(settings.warehouse_dir)
    past = reader.open_past(old)
    views = "SELECT view_name FROM duckdb_views() WHERE schema_name = current_schema() ORDER BY 1"
    assert past.query(views).height == 0
    assert closes(past) == [1.0, 2.0]
    assert past.query(views)["view_name"].to_list() == ["daily_prices"]
    assert past.query("SELECT count(*) AS n FROM instruments")["n"].to_list() == [0]
    reader.close()
