"""Rule: Dagster shows what the warehouse holds. After a first load and after a day, each table
asset's latest materialization has `dagster/row_count` = the table's rows and the rows the run
wrote as `mi/rows_written`; every table asset has its catalog columns, location, kinds and owner.

Real `mi materialize` runs, read back through Dagster's own instance API."""

from __future__ import annotations

import subprocess
from pathlib import Path

import dagster as dg
import pytest

from mi.commands.pipeline import open_instance
from pipelines.catalog import DAILY_PRICES, TABLES, TREND_HISTORY
from pipelines.definitions import build_definitions
from pipelines.platform.settings import load_settings
from pipelines.warehouse.metadata import KINDS, OWNER, ROWS_WRITTEN
from pipelines.warehouse.store import Warehouse
from tests.api.metering.conftest import MI
from tests.served import INSTRUMENTS, clean_env

pytestmark = pytest.mark.slow


def _materialize(data_dir: Path, day: str, *args: str) -> None:
    env = clean_env(
        data_dir, MI_INSTRUMENTS=INSTRUMENTS, MI_END_DATE=day, MI_NOW=f"{day}T12:00:00+00:00"
    )
    done = subprocess.run(
        [MI, "materialize", *args], env=env, capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]


def _latest(data_dir: Path, table: str) -> dict[str, object]:
    settings = load_settings({"MI_DATA_DIR": str(data_dir)})
    with open_instance(settings) as instance:
        event = instance.get_latest_materialization_event(dg.AssetKey(table))
    assert event is not None
    assert event.asset_materialization is not None
    return {k: v.value for k, v in event.asset_materialization.metadata.items()}


@pytest.fixture(scope="module")
def loaded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A data dir after a first load of the tests' embedded market (the day test adds a day)."""
    data_dir = tmp_path_factory.mktemp("dagster-metadata") / "data"
    _materialize(data_dir, "2026-03-02")
    return data_dir


def test_after_a_first_load_every_asset_is_materialized_and_none_has_missing_days(
    loaded: Path,
) -> None:
    """Rule: the UI shows a complete warehouse as complete (it showed 1,065 of 1,066 days
    missing): no asset is partitioned, every one has its materialization, and a table's row
    count is its rows."""
    settings = load_settings({"MI_DATA_DIR": str(loaded)})
    graph = build_definitions(settings).resolve_asset_graph()
    keys = graph.materializable_asset_keys
    assert all(graph.get(key).partitions_def is None for key in keys)
    with open_instance(settings) as instance:
        missing = [k for k in keys if instance.get_latest_materialization_event(k) is None]
        (run,) = [r for r in instance.get_runs(limit=1) if r.job_name == "daily_update"]
    assert missing == []
    assert run.run_config["resources"]["run_options"]["config"]["day"] == "2026-03-02"  # type: ignore[index]
    prices = _latest(loaded, DAILY_PRICES.name)
    assert prices["dagster/row_count"] == Warehouse(loaded / "warehouse").read(DAILY_PRICES).height
    # A first load's last run is its second daily pass (after the news), which finds no new bar:
    # the table's rows stay the count, what the run wrote is its own.
    assert prices[ROWS_WRITTEN] == 0


def test_a_day_counts_the_tables_rows_and_the_runs_apart(loaded: Path) -> None:
    warehouse = Warehouse(loaded / "warehouse")
    first = warehouse.read(DAILY_PRICES).height
    _materialize(loaded, "2026-03-03", "--job", "daily")  # a Tuesday: every market trades
    day = _latest(loaded, DAILY_PRICES.name)
    after = warehouse.read(DAILY_PRICES).height
    assert day["dagster/row_count"] == after
    assert day[ROWS_WRITTEN] == after - first == int(INSTRUMENTS)
    assert day["through"] == "2026-03-03"
    trends = _latest(loaded, TREND_HISTORY.name)
    assert trends["dagster/row_count"] == warehouse.read(TREND_HISTORY).height


def test_every_table_asset_carries_its_columns_location_kinds_and_owner(tmp_path: Path) -> None:
    settings = load_settings({"MI_DATA_DIR": str(tmp_path / "data")})
    definitions = build_definitions(settings)
    graph = definitions.resolve_asset_graph()
    specs = {spec.key.path[-1]: spec for assets in graph.assets_defs for spec in assets.specs}
    for table in TABLES.values():
        spec = specs[table.name]
        schema = spec.metadata["dagster/column_schema"]
        assert [c.name for c in schema.columns] == [c.name for c in table.columns], table.name
        assert all(c.description for c in schema.columns), table.name
        assert spec.metadata["dagster/uri"] == f"{settings.warehouse.url}/{table.name}"
        assert set(spec.kinds) == KINDS
        assert spec.owners == [OWNER]
