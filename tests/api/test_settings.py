"""Settings come from an environment mapping, with the defaults decisions.md names."""

from __future__ import annotations

from pathlib import Path

import pytest

from api.settings import load_settings
from pipelines.catalog import MARKETS


def test_defaults_serve_all_four_markets_from_data(tmp_path: Path) -> None:
    settings = load_settings({})
    assert settings.live_markets == MARKETS
    assert settings.data_dir == Path("data").resolve()
    assert settings.version == "1.0.0"


def test_data_dir_gives_the_warehouse_and_its_manifest(tmp_path: Path) -> None:
    settings = load_settings({"MI_DATA_DIR": str(tmp_path)})
    assert settings.warehouse_dir == tmp_path / "warehouse"
    assert settings.manifest_path == tmp_path / "warehouse" / "_manifest.json"


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("crypto", ("crypto",)),
        ("Stocks, crypto", ("crypto", "stocks")),
        ("forex,forex,", ("forex",)),
    ],
)
def test_live_markets_are_a_comma_list_in_catalog_order(
    raw: str, expected: tuple[str, ...]
) -> None:
    assert load_settings({"MI_LIVE_MARKETS": raw}).live_markets == expected


@pytest.mark.parametrize("raw", ["bonds", "crypto,bonds", " , "])
def test_live_markets_refuse_unknown_or_no_market(raw: str) -> None:
    with pytest.raises(ValueError, match="MI_LIVE_MARKETS"):
        load_settings({"MI_LIVE_MARKETS": raw})


def test_thresholds_are_configurable() -> None:
    settings = load_settings(
        {"MI_MATERIALIZATION_MAX_AGE_HOURS": "2", "MI_MANIFEST_POLL_SECONDS": "0.5"}
    )
    assert settings.materialization_max_age.total_seconds() == 7200
    assert settings.manifest_poll_seconds == 0.5


def test_the_warehouse_cache_lives_under_the_data_dir_unless_configured(tmp_path: Path) -> None:
    settings = load_settings({"MI_DATA_DIR": str(tmp_path)})
    assert settings.cache_dir == tmp_path / "cache" / "warehouse"
    assert settings.warehouse_cache_bytes == 4096 << 20
    moved = load_settings(
        {"MI_WAREHOUSE_CACHE_DIR": str(tmp_path / "ssd"), "MI_WAREHOUSE_CACHE_MB": "64"}
    )
    assert moved.cache_dir == tmp_path / "ssd"
    assert moved.warehouse_cache_bytes == 64 << 20


@pytest.mark.parametrize("raw", ["lots", "0", "-5", "1.5"])
def test_the_cache_bound_must_be_a_positive_whole_number_of_mib(raw: str) -> None:
    with pytest.raises(ValueError, match="MI_WAREHOUSE_CACHE_MB"):
        load_settings({"MI_WAREHOUSE_CACHE_MB": raw})
