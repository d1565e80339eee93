"""The API reads an s3:// warehouse (moto's S3 server on a loopback port) exactly as a local one.

Rules: `MI_WAREHOUSE_URL` chooses the storage for the API as for the pipeline; the reader polls the
manifest with a HEAD (no body while nothing changed), fetches only the objects of a new version it
has not fetched before into its disk cache, views them in place and swaps the snapshot in
atomically; a version whose objects cannot be read is not served.
"""

from __future__ import annotations

import io
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import boto3
import polars as pl
import pytest
from litestar import get
from litestar.di import NamedDependency
from litestar.testing import TestClient

from api.app import create_app
from api.settings import ApiSettings, load_settings
from api.warehouse import DuckDBWarehouseReader, WarehouseSnapshot
from api.warehouse.files import FileCache
from pipelines.catalog import BRIEFS, DAILY_PRICES, INSTRUMENTS, Manifest, S3Location
from pipelines.warehouse.object_store import ObjectWarehouse
from tests.api.conftest import price_frame
from tests.s3 import moto_endpoint, new_bucket

CLOSES = "SELECT close FROM daily_prices ORDER BY date"


@pytest.fixture(scope="module")
def endpoint() -> Iterator[str]:
    with moto_endpoint() as url:
        yield url


@pytest.fixture
def location(endpoint: str) -> S3Location:
    return S3Location.parse(f"s3://{new_bucket(endpoint)}/wh", endpoint_url=endpoint)


@dataclass
class CountingStorage:
    """The S3 location, counting manifest HEADs and GETs."""

    location: S3Location
    calls: list[str] = field(default_factory=list)

    @property
    def url(self) -> str:
        return self.location.url

    def manifest_tag(self) -> str | None:
        self.calls.append("head")
        return self.location.manifest_tag()

    def read_manifest(self) -> Manifest | None:
        self.calls.append("get")
        return self.location.read_manifest()

    def filesystem(self):  # type: ignore[no-untyped-def]
        return self.location.filesystem()

    def arrow_path(self, relative: str) -> str:
        return self.location.arrow_path(relative)


def closes(snapshot: WarehouseSnapshot | None) -> list[float]:
    assert snapshot is not None
    return snapshot.query(CLOSES)["close"].to_list()


def test_the_reader_loads_each_new_version_and_polls_with_a_head(location: S3Location) -> None:
    store = ObjectWarehouse(location)
    storage = CountingStorage(location)
    reader = DuckDBWarehouseReader(storage)
    assert reader.refresh() is False  # no manifest yet: nothing to serve
    assert reader.current() is None
    first = store.write(DAILY_PRICES, "crypto", price_frame([1.0, 2.0]))
    assert reader.refresh() is True
    old = reader.current()
    assert old is not None
    assert old.version == first.version
    assert closes(old) == [1.0, 2.0]
    assert old.query("SELECT * FROM instruments").columns == INSTRUMENTS.column_names
    assert old.query("SELECT * FROM daily_prices").schema == DAILY_PRICES.schema

    storage.calls.clear()
    assert reader.refresh() is False
    assert storage.calls == ["head"]  # unchanged: one HEAD, no GET, no object read

    second = store.write(DAILY_PRICES, "crypto", price_frame([3.0, 4.0, 5.0]))
    assert reader.refresh() is True
    assert reader.data_version == second.version
    assert closes(reader.current()) == [3.0, 4.0, 5.0]
    assert closes(old) == [1.0, 2.0]  # a request still on the old snapshot keeps its version
    reader.close()


def test_a_version_whose_object_is_gone_is_not_swapped_in(location: S3Location) -> None:
    store = ObjectWarehouse(location)
    reader = DuckDBWarehouseReader(location, retry_seconds=0.0)
    first = store.write(DAILY_PRICES, "crypto", price_frame([1.0]))
    reader.refresh()
    second = store.write(DAILY_PRICES, "crypto", price_frame([2.0]))
    client = boto3.client("s3", endpoint_url=location.endpoint_url, region_name="us-east-1")
    client.delete_object(Bucket=location.bucket, Key=second.path.split("/", 3)[3])
    assert reader.refresh() is False
    assert reader.data_version == first.version
    assert reader.failure is not None
    assert f"version {second.version}" in reader.failure
    # A failed version is retried (after `retry_seconds`): once readable, it is served.
    client.put_object(
        Bucket=location.bucket,
        Key=second.path.split("/", 3)[3],
        Body=_parquet(DAILY_PRICES.conform(price_frame([2.0]))),
    )
    assert reader.refresh() is True
    assert reader.data_version == second.version
    assert reader.failure is None
    reader.close()


def test_a_version_that_changed_one_table_fetches_only_its_new_file(
    location: S3Location, tmp_path: Path
) -> None:
    store = ObjectWarehouse(location)
    store.write(DAILY_PRICES, "crypto", price_frame([1.0, 2.0]))
    store.write(INSTRUMENTS, "crypto", INSTRUMENTS.empty())
    reader = DuckDBWarehouseReader(location, files=FileCache(location, tmp_path / "cache"))
    assert reader.refresh() is True
    assert reader.last_load is not None
    assert reader.last_load.fetched_files == 2
    news = store.write(BRIEFS, "crypto", BRIEFS.empty())  # a news-only version
    assert reader.refresh() is True
    assert reader.last_load.version == news.version
    assert reader.last_load.fetched_files == 1
    [brief_file] = news_manifest_files(reader, "briefs")
    assert reader.last_load.fetched_bytes == (tmp_path / "cache/slot-0" / brief_file).stat().st_size
    assert closes(reader.current()) == [1.0, 2.0]
    reader.close()


def news_manifest_files(reader: DuckDBWarehouseReader, table: str) -> list[str]:
    snapshot = reader.current()
    assert snapshot is not None
    return snapshot.manifest.files(table)


def test_a_snapshot_copies_no_data_it_views_the_cached_files(location: S3Location) -> None:
    ObjectWarehouse(location).write(DAILY_PRICES, "crypto", price_frame([1.0, 2.0]))
    reader = DuckDBWarehouseReader(location)
    reader.refresh()
    snapshot = reader.current()
    assert snapshot is not None
    assert snapshot.query("SELECT * FROM duckdb_tables()").is_empty()
    views = snapshot.query("SELECT view_name FROM duckdb_views() WHERE NOT internal")
    assert "daily_prices" in views["view_name"].to_list()
    reader.close()


def test_a_truncated_object_refuses_the_version(location: S3Location) -> None:
    store = ObjectWarehouse(location)
    store.write(DAILY_PRICES, "crypto", price_frame([1.0]))
    reader = DuckDBWarehouseReader(location)
    reader.refresh()
    served = reader.data_version
    second = store.write(DAILY_PRICES, "crypto", price_frame([2.0, 3.0]))
    body = _parquet(DAILY_PRICES.conform(price_frame([2.0, 3.0])))
    client = boto3.client("s3", endpoint_url=location.endpoint_url, region_name="us-east-1")
    client.put_object(Bucket=location.bucket, Key=second.path.split("/", 3)[3], Body=body[:-100])
    assert reader.refresh() is False
    assert reader.data_version == served
    assert reader.failure is not None
    reader.close()


def _parquet(frame: pl.DataFrame) -> bytes:
    buffer = io.BytesIO()
    frame.write_parquet(buffer)
    return buffer.getvalue()


@get("/test/version", sync_to_thread=False)
def version_route(snapshot: NamedDependency[WarehouseSnapshot]) -> dict[str, object]:
    return {"version": snapshot.version, "closes": closes(snapshot)}


def test_mi_warehouse_url_points_the_app_at_object_storage(
    location: S3Location, tmp_path: Path
) -> None:
    env = {
        "MI_DATA_DIR": str(tmp_path),
        "MI_WAREHOUSE_URL": location.url,
        "MI_S3_ENDPOINT_URL": str(location.endpoint_url),
        "MI_MANIFEST_POLL_SECONDS": "0.05",
    }
    settings = load_settings(env)
    assert settings.warehouse == location
    assert load_settings({"MI_DATA_DIR": str(tmp_path)}).warehouse_dir == tmp_path / "warehouse"
    store = ObjectWarehouse(location)
    first = store.write(DAILY_PRICES, "crypto", price_frame([1.0]))
    app = create_app(settings)
    app.register(version_route)
    with TestClient(app) as client:
        assert client.get("/test/version").json() == {"version": first.version, "closes": [1.0]}
        assert client.get("/api/v1/status").status_code == 200
        second = store.write(DAILY_PRICES, "crypto", price_frame([2.0, 3.0]))
        deadline = time.monotonic() + 5
        while client.get("/test/version").json()["version"] != second.version:
            assert time.monotonic() < deadline, "the watcher never loaded the new version"
            time.sleep(0.02)
        assert client.get("/test/version").json()["closes"] == [2.0, 3.0]


def test_default_settings_stay_local(tmp_path: Path) -> None:
    settings = ApiSettings(data_dir=tmp_path)
    assert settings.warehouse_dir == tmp_path / "warehouse"
    assert settings.warehouse_url is None


def test_a_past_version_opens_from_its_record_on_s3(location: S3Location, tmp_path: Path) -> None:
    """Rule (decisions.md, Point in time): `as_of` reads a retained version on object storage as
    on disk: its record names its objects, which the host's cache fetches once."""
    store = ObjectWarehouse(location)
    old = store.write(DAILY_PRICES, "crypto", price_frame([1.0, 2.0])).version
    store.write(DAILY_PRICES, "crypto", price_frame([3.0]))
    reader = DuckDBWarehouseReader(location, files=FileCache(location, tmp_path / "cache"))
    reader.refresh()
    assert closes(reader.current()) == [3.0]
    past = reader.open_past(old)
    assert closes(past) == [1.0, 2.0]
    assert reader.past(old) is past
    assert reader.changes(old) == {"crypto": ["daily_prices"]}
    reader.close()
