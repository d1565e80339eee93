"""The IO manager: polars outputs stored as warehouse partitions through the manifest, and read back."""

from pathlib import Path

import dagster as dg
import polars as pl
import pytest
from dagster import AssetExecutionContext

from pipelines.catalog import INSTRUMENTS, read_manifest
from pipelines.partitions import MARKET_PARTITIONS
from pipelines.warehouse.io_manager import WarehouseIOManager
from pipelines.warehouse.store import WHOLE_TABLE, Warehouse
from tests.pipelines.warehouse.conftest import instruments_frame


@dg.asset(partitions_def=MARKET_PARTITIONS)
def instruments(context: AssetExecutionContext) -> pl.DataFrame:
    market = context.partition_key
    return instruments_frame(market, f"{market[:3].upper()}1", f"{market[:3].upper()}2")


@dg.asset(partitions_def=MARKET_PARTITIONS)
def symbol_count(instruments: pl.DataFrame) -> None:
    assert instruments.height == 2


@dg.asset
def every_symbol(instruments: pl.DataFrame) -> None:
    assert instruments.height == 8


@dg.asset
def not_a_table() -> pl.DataFrame:
    return pl.DataFrame({"a": [1]})


@pytest.fixture
def io_manager(tmp_path: Path) -> WarehouseIOManager:
    """The IO manager over a warehouse and DuckDB file in tmp_path."""
    return WarehouseIOManager(
        warehouse_dir=str(tmp_path / "warehouse"), duckdb_path=str(tmp_path / "warehouse.duckdb")
    )


def _materialize(
    assets: list[dg.AssetsDefinition], io_manager: WarehouseIOManager, partition: str | None
) -> dg.ExecuteInProcessResult:
    return dg.materialize(assets, resources={"io_manager": io_manager}, partition_key=partition)


def test_round_trip_per_partition(io_manager: WarehouseIOManager) -> None:
    for market in ("crypto", "forex"):
        result = _materialize([instruments, symbol_count], io_manager, market)
        assert result.success
    stored = io_manager.warehouse().read(INSTRUMENTS, ["forex"])
    assert stored["symbol"].to_list() == ["FOR1", "FOR2"]


def test_output_metadata_names_rows_path_and_version(io_manager: WarehouseIOManager) -> None:
    result = _materialize([instruments], io_manager, "crypto")
    [materialization] = result.asset_materializations_for_node("instruments")
    metadata = materialization.metadata
    manifest = read_manifest(Path(io_manager.warehouse_dir))
    assert manifest is not None
    assert metadata["row_count"] == dg.MetadataValue.int(2)
    assert metadata["version"] == dg.MetadataValue.int(manifest.version)
    path = Path(str(metadata["path"].value))
    assert path == Path(io_manager.warehouse_dir) / manifest.tables["instruments"]["crypto"].path


def test_an_unpartitioned_downstream_reads_every_partition(io_manager: WarehouseIOManager) -> None:
    for market in ("crypto", "forex", "commodities", "stocks"):
        _materialize([instruments], io_manager, market)
    result = dg.materialize(
        [instruments, every_symbol],
        resources={"io_manager": io_manager},
        selection=[every_symbol],
    )
    assert result.success


def test_reading_a_partition_never_materialized_fails_naming_it(
    io_manager: WarehouseIOManager,
) -> None:
    _materialize([instruments], io_manager, "crypto")
    with pytest.raises(LookupError, match="forex"):
        dg.materialize(
            [instruments, symbol_count],
            resources={"io_manager": io_manager},
            selection=[symbol_count],
            partition_key="forex",
        )


def test_an_asset_that_is_not_a_catalog_table_is_refused(io_manager: WarehouseIOManager) -> None:
    with pytest.raises(KeyError, match="not a warehouse table"):
        _materialize([not_a_table], io_manager, None)


def test_an_unpartitioned_asset_is_stored_whole(tmp_path: Path) -> None:
    @dg.asset(name="instruments")
    def all_instruments() -> pl.DataFrame:
        return pl.concat([instruments_frame("crypto", "BTC"), instruments_frame("forex", "EURUSD")])

    io_manager = WarehouseIOManager(warehouse_dir=str(tmp_path / "warehouse"))
    assert _materialize([all_instruments], io_manager, None).success
    manifest = read_manifest(tmp_path / "warehouse")
    assert manifest is not None
    assert list(manifest.tables["instruments"]) == [WHOLE_TABLE]
    assert Warehouse(tmp_path / "warehouse").read(INSTRUMENTS).height == 2
