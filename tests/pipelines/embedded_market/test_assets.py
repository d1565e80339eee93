"""The embedded_market_files asset and build_defs."""

from __future__ import annotations

from datetime import UTC, date, datetime
from pathlib import Path

import dagster as dg

from pipelines.embedded_market.assets import instruments_for, resolve_as_of
from pipelines.embedded_market.definitions import build_defs
from pipelines.settings import PipelineSettings

NOW = datetime(2026, 3, 4, 14, 37, 12, tzinfo=UTC)


def _settings(
    tmp_path: Path, end: date | None = None, instruments: int | None = None
) -> PipelineSettings:
    return PipelineSettings(
        data_dir=tmp_path, sources_config=None, seed=5, end_date=end, instruments=instruments
    )


def test_as_of_is_now_floored_to_the_hour_without_an_end_date(tmp_path: Path) -> None:
    assert resolve_as_of(_settings(tmp_path), NOW) == datetime(2026, 3, 4, 14, tzinfo=UTC)


def test_as_of_is_the_end_dates_last_second_capped_at_now(tmp_path: Path) -> None:
    past = _settings(tmp_path, end=date(2026, 1, 31))
    assert resolve_as_of(past, NOW) == datetime(2026, 1, 31, 23, 59, 59, tzinfo=UTC)
    today = _settings(tmp_path, end=date(2026, 3, 4))
    assert resolve_as_of(today, NOW) == datetime(2026, 3, 4, 14, tzinfo=UTC)


def test_scaled_settings_split_instruments_and_default_settings_do_not(tmp_path: Path) -> None:
    assert instruments_for(_settings(tmp_path), "crypto") is None
    assert instruments_for(_settings(tmp_path, instruments=132), "forex") == 20


def test_asset_writes_its_market_partition_and_reports_counts(tmp_path: Path) -> None:
    settings = _settings(tmp_path, end=date(2025, 6, 30), instruments=8)
    defs = build_defs(settings)
    asset = defs.resolve_assets_def("embedded_market_files")
    assert asset.group_names_by_key[asset.key] == "sources"
    assert asset.partitions_def is not None
    assert set(asset.partitions_def.get_partition_keys()) == {
        "crypto",
        "forex",
        "commodities",
        "stocks",
    }
    result = dg.materialize([asset], partition_key="commodities")
    assert result.success
    metadata = result.asset_materializations_for_node("embedded_market_files")[0].metadata
    assert metadata["instruments"].value == 1  # 8 split across four markets: 3, 1, 1, 3
    assert metadata["defects"].value == 7
    assert metadata["last_date"].value == "2025-06-30"
    assert (settings.embedded_dir / "prices/commodities/GOLD.csv").is_file()
    assert not (settings.embedded_dir / "prices/crypto").exists()
