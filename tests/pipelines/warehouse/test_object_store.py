"""The warehouse on an s3:// root, against a local S3-compatible server (moto) on a loopback port.

Rules: the warehouse resource and the DuckDB views take an s3:// root by configuration alone; the manifest
commit is a compare-and-swap on its ETag, so concurrent writers never lose an update; a stale
writer's PUT is refused (412) and retried; retired objects are deleted only after the grace.
"""

import json
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import dagster as dg
import duckdb
import pytest
from pyarrow.fs import FileType

from pipelines.catalog import INSTRUMENTS, MANIFEST_NAME, Manifest
from pipelines.catalog.versions import Retention, read_record
from pipelines.jobs.publish import build_publish
from pipelines.platform.runs import RunOptions
from pipelines.warehouse.commits import CommitConflictError
from pipelines.warehouse.object_store import ObjectWarehouse, S3Location
from pipelines.warehouse.resource import WarehouseResource
from pipelines.warehouse.staging import RunTransaction, is_mapped, step_of_record
from pipelines.warehouse.store import STAGING_TTL
from pipelines.warehouse.views import apply_object_views
from tests.s3 import moto_endpoint, new_bucket

from .conftest import ONLY_CURRENT, instruments_frame


@pytest.fixture(scope="module")
def endpoint() -> Iterator[str]:
    with moto_endpoint() as url:
        yield url


@pytest.fixture
def location(endpoint: str) -> S3Location:
    """A fresh bucket; the warehouse under a prefix of it."""
    return S3Location.parse(f"s3://{new_bucket(endpoint)}/warehouse", endpoint_url=endpoint)


def build_instruments() -> dg.AssetsDefinition:
    def build() -> dg.AssetsDefinition:
        @dg.asset(name=INSTRUMENTS.name)
        def instruments(
            context: dg.AssetExecutionContext, warehouse: WarehouseResource, run_options: RunOptions
        ) -> None:
            tx = warehouse.transaction(context.run.run_id, "instruments")
            for market in run_options.markets:
                entry = tx.write_file(INSTRUMENTS, market, instruments_frame(market, "AAA", "BBB"))
                tx.stage(INSTRUMENTS.name, market, {market: entry})

        return instruments

    return build()


def test_the_warehouse_resource_writes_a_run_to_an_s3_root(location: S3Location) -> None:
    """Configuration alone (an s3:// warehouse_dir) sends a run's tables to object storage, where
    its publish step commits them; the DuckDB views query the manifest's objects."""
    resource = WarehouseResource(warehouse_dir=location.url, s3_endpoint_url=location.endpoint_url)
    publish = build_publish("daily_publish", [INSTRUMENTS.name], True, "test")
    result = dg.materialize(
        [build_instruments(), publish],
        resources={
            "warehouse": resource,
            "run_options": RunOptions(markets=["crypto", "forex"], day="2026-03-02"),
        },
    )
    assert result.success
    manifest = ObjectWarehouse(location).manifest()
    assert manifest is not None
    assert sorted(manifest.tables["instruments"]) == ["crypto", "forex"]
    con = duckdb.connect(":memory:")
    apply_object_views(con, location, manifest)
    rows = con.sql("select market, count(*) from instruments group by all order by 1").fetchall()
    assert rows == [("crypto", 2), ("forex", 2)]
    assert con.sql("select count(*) from daily_prices").fetchall() == [(0,)]  # typed, empty
    assert con.sql("select version, root from _warehouse").fetchall() == [
        (manifest.version, location.url)
    ]
    con.close()


def test_concurrent_writers_all_land(location: S3Location) -> None:
    """Eight writers commit eight partitions at once (released together by a barrier): every
    partition is in the final manifest, and the version grew once per commit."""
    warehouse = ObjectWarehouse(location)
    markets = [f"m{index}" for index in range(8)]
    barrier = threading.Barrier(len(markets))
    commits = []

    def write(market: str) -> None:
        barrier.wait()
        commits.append(warehouse.write(INSTRUMENTS, market, instruments_frame(market, "AAA")))

    threads = [threading.Thread(target=write, args=(market,)) for market in markets]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert len(commits) == len(markets)
    manifest = warehouse.manifest()
    assert manifest is not None
    assert sorted(manifest.tables["instruments"]) == markets
    assert manifest.version == max(commit.version for commit in commits)
    assert len({commit.version for commit in commits}) == len(markets)
    assert warehouse.read(INSTRUMENTS).height == len(markets)


def test_a_stale_writer_is_refused_and_retries_from_the_new_manifest(location: S3Location) -> None:
    """A PUT conditioned on an ETag another writer has replaced fails (412, nothing written); the
    retry loop then lands the change on top of the other writer's."""
    warehouse = ObjectWarehouse(location)
    client = location.client()
    warehouse.write(INSTRUMENTS, "crypto", instruments_frame("crypto", "AAA"))
    stale = warehouse.snapshot(client)
    warehouse.write(INSTRUMENTS, "forex", instruments_frame("forex", "EUR"))
    assert stale.manifest is not None
    bogus = Manifest(version=stale.manifest.version + 1, updated_at="", tables={})
    assert not warehouse._put_manifest(client, stale.etag, bogus, {})
    assert not warehouse._put_manifest(client, None, bogus, {})  # absent-only create refused too
    current = warehouse.manifest()
    assert current is not None
    assert sorted(current.tables["instruments"]) == ["crypto", "forex"]
    reply = client.head_object(Bucket=location.bucket, Key=location.key(MANIFEST_NAME))
    assert reply["ETag"] != stale.etag


def test_snapshot_reads_and_garbage_after_the_grace(location: S3Location) -> None:
    """A reader holding the previous manifest still reads its object after a rewrite and an
    expiry (default grace); with no grace, expiry deletes an expired version's objects at once."""
    kept = ObjectWarehouse(location)
    first = kept.write(INSTRUMENTS, "crypto", instruments_frame("crypto", "AAA"))
    before = kept.manifest()
    kept.write(INSTRUMENTS, "crypto", instruments_frame("crypto", "AAA", "BBB"))
    assert before is not None
    fs = location.filesystem()
    old = location.arrow_path(before.tables["instruments"]["crypto"].path)
    assert kept.expire(ONLY_CURRENT).removed == ()
    assert fs.get_file_info(old).size > 0  # still there for the old snapshot's readers
    assert kept.read(INSTRUMENTS).height == 2

    graceless = ObjectWarehouse(location, gc_grace=timedelta(0))
    third = graceless.write(INSTRUMENTS, "crypto", instruments_frame("crypto", "CCC"))
    removed = graceless.expire(ONLY_CURRENT).removed
    assert any(first.path.endswith(path) for path in removed)
    assert len([p for p in removed if p.endswith(".parquet")]) == 2
    assert len([p for p in removed if p.startswith("_versions/")]) == 2
    assert fs.get_file_info(old).type.name == "NotFound"
    assert third.version == graceless.manifest().version  # type: ignore[union-attr]
    assert graceless.read(INSTRUMENTS)["symbol"].to_list() == ["CCC"]


def _stage(tx: RunTransaction, market: str, *symbols: str) -> None:
    entry = tx.write_file(INSTRUMENTS, market, instruments_frame(market, *symbols))
    tx.stage(INSTRUMENTS.name, market, {market: entry})


def test_a_run_commits_its_staged_tables_on_s3_in_one_version(location: S3Location) -> None:
    warehouse = ObjectWarehouse(location)
    first = RunTransaction(warehouse, "run-1", "one")
    _stage(first, "crypto", "AAA")
    _stage(RunTransaction(warehouse, "run-1", "two"), "forex", "EUR")
    assert warehouse.manifest() is None
    published = RunTransaction(warehouse, "run-1", "publish").commit()
    manifest = warehouse.manifest()
    assert manifest is not None
    assert manifest.version == published.version
    assert manifest.markets(INSTRUMENTS.name) == ["crypto", "forex"]
    assert warehouse.staging_records("run-1") == []


def test_a_run_on_s3_that_stages_only_the_current_objects_publishes_no_version(
    location: S3Location,
) -> None:
    warehouse = ObjectWarehouse(location)
    warehouse.write(INSTRUMENTS, "crypto", instruments_frame("crypto", "AAA"))
    before = warehouse.snapshot()
    assert before.manifest is not None
    tx = RunTransaction(warehouse, "quiet", "one")
    tx.stage(INSTRUMENTS.name, "crypto", tx.partitions(INSTRUMENTS.name, "crypto"))
    published = RunTransaction(warehouse, "quiet", "publish").commit()
    assert (published.version, published.published) == (before.manifest.version, False)
    assert warehouse.snapshot().etag == before.etag  # the manifest object was not replaced


def test_a_stale_run_cannot_commit_over_another_on_s3(location: S3Location) -> None:
    warehouse = ObjectWarehouse(location)
    warehouse.write(INSTRUMENTS, "crypto", instruments_frame("crypto", "AAA"))
    slow, fast = RunTransaction(warehouse, "slow", "s"), RunTransaction(warehouse, "fast", "s")
    _stage(slow, "crypto", "SLOW")
    _stage(fast, "crypto", "FAST")
    RunTransaction(warehouse, "fast", "publish").commit()
    with pytest.raises(CommitConflictError, match="instruments/crypto"):
        RunTransaction(warehouse, "slow", "publish").commit()
    assert warehouse.read(INSTRUMENTS)["symbol"].to_list() == ["FAST"]


def test_expiry_keeps_a_live_runs_staged_objects(location: S3Location) -> None:
    warehouse = ObjectWarehouse(location, gc_grace=timedelta(0))
    warehouse.write(INSTRUMENTS, "forex", instruments_frame("forex", "EUR"))
    tx = RunTransaction(warehouse, "live", "s")
    _stage(tx, "crypto", "AAA")
    staged = location.arrow_path(tx.partitions(INSTRUMENTS.name, "crypto")["crypto"].path)
    assert warehouse.expire(ONLY_CURRENT, now=time.time() + 60).removed == ()
    assert location.filesystem().get_file_info(staged).size > 0
    later = time.time() + STAGING_TTL.total_seconds() + 60
    assert len(warehouse.expire(ONLY_CURRENT, now=later).removed) == 1
    assert warehouse.staging_records("live") == []


def test_expiry_on_s3_collects_what_crashed_runs_left(location: S3Location) -> None:
    warehouse = ObjectWarehouse(location, gc_grace=timedelta(0))
    crashed = RunTransaction(warehouse, "crashed", "s")
    left = crashed.write_file(INSTRUMENTS, "crypto", instruments_frame("crypto", "ZZZ"))
    warehouse.drop_staging("crashed")  # its record is gone (expired): nothing protects the file
    tx = RunTransaction(warehouse, "next", "s")
    _stage(tx, "crypto", "AAA")
    RunTransaction(warehouse, "next", "publish").commit()
    warehouse.expire(ONLY_CURRENT, now=time.time() + 1)
    info = location.filesystem().get_file_info(location.arrow_path(left.path))
    assert info.type == FileType.NotFound
    assert warehouse.read(INSTRUMENTS)["symbol"].to_list() == ["AAA"]


def test_a_step_on_s3_reads_the_results_of_mapped_steps_only_when_asked(
    location: S3Location,
) -> None:
    warehouse = ObjectWarehouse(location)
    RunTransaction(warehouse, "run-m", "trends_shard[crypto_s0of2]").set_result({"rows": 2})
    _stage(RunTransaction(warehouse, "run-m", "prices"), "crypto", "AAA")
    mapped = warehouse.staging_records("run-m", lambda name: is_mapped(step_of_record(name)))
    steps = warehouse.staging_records("run-m", lambda name: not is_mapped(step_of_record(name)))
    assert [json.loads(body)["step"] for body in mapped] == ["trends_shard[crypto_s0of2]"]
    assert [json.loads(body)["step"] for body in steps] == ["prices"]
    stage = RunTransaction(warehouse, "run-m", "trends_stage")
    assert stage.results("trends_shard[") == {"trends_shard[crypto_s0of2]": {"rows": 2}}


def test_expiry_on_s3_keeps_the_retained_versions_and_deletes_the_rest(
    location: S3Location,
) -> None:
    """Retention on object storage as on disk: three days of commits, one kept per past day."""
    at = [datetime(2026, 3, 1, 9, tzinfo=UTC)]
    warehouse = ObjectWarehouse(location, gc_grace=timedelta(0), clock=lambda: at[0])
    versions = []
    for day in range(3):
        for hour in (9, 18):
            at[0] = datetime(2026, 3, 1 + day, hour, tzinfo=UTC)
            symbol = f"D{day}H{hour}"
            versions.append(warehouse.write(INSTRUMENTS, "crypto", instruments_frame("crypto", symbol)))  # fmt: skip
    at[0] = datetime(2026, 3, 3, 20, tzinfo=UTC)
    expiry = warehouse.expire(Retention(keep_all_days=0.5, retain_days=30))
    kept = [v.version for v in expiry.kept]
    assert kept == [versions[1].version, versions[3].version, versions[4].version, versions[5].version]  # fmt: skip
    fs = location.filesystem()
    for commit in versions:
        record = read_record(location, commit.version)
        assert (record is not None) == (commit.version in kept)
        exists = fs.get_file_info(commit.path.removeprefix("s3://")).type != FileType.NotFound
        assert exists == (commit.version in kept)
