"""The embedded market's assets and build_defs."""

from __future__ import annotations

from datetime import date
from pathlib import Path

import dagster as dg

from pipelines.embedded_market.assets import instruments_for, price_day
from pipelines.embedded_market.definitions import build_defs
from pipelines.platform.settings import PipelineSettings


def _settings(
    tmp_path: Path, end: date | None = None, instruments: int | None = None
) -> PipelineSettings:
    return PipelineSettings(
        data_dir=tmp_path, sources_config=None, seed=5, end_date=end, instruments=instruments
    )


def test_scaled_settings_split_instruments_and_default_settings_do_not(tmp_path: Path) -> None:
    assert instruments_for(_settings(tmp_path), "crypto") is None
    assert instruments_for(_settings(tmp_path, instruments=132), "forex") == 20


def test_prices_are_written_through_the_run_day_never_after_the_end_date(tmp_path: Path) -> None:
    day = date(2026, 3, 4)
    assert price_day(_settings(tmp_path), day) == day
    assert price_day(_settings(tmp_path, end=date(2026, 1, 31)), day) == date(2026, 1, 31)
    assert price_day(_settings(tmp_path, end=date(2026, 5, 1)), day) == day


def test_embedded_mode_defines_a_prices_and_a_news_asset_in_the_sources_group(
    tmp_path: Path,
) -> None:
    assets = [
        a
        for a in build_defs(_settings(tmp_path)).assets or []
        if isinstance(a, dg.AssetsDefinition)
    ]
    groups = {
        key.to_user_string(): group for a in assets for key, group in a.group_names_by_key.items()
    }
    assert groups == {"embedded_market_prices": "sources", "embedded_market_news": "sources"}
    configured = PipelineSettings(
        data_dir=tmp_path, sources_config=tmp_path / "sources.toml", seed=5, end_date=None
    )
    assert list(build_defs(configured).assets or []) == []
