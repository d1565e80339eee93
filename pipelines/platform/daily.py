"""The daily job's assets and the days a daily run can be asked for.

The daily assets are not partitioned: each carries its state and a run brings every table up to
the run's day (`RunOptions.day`) in one go, from the sources' history on a first load. Dagster
then shows each asset as what it is, materialized through the day its last run names (in that
run's config and its materialization's `through` metadata), never a thousand "missing" days a
backfill would offer to fill (docs/pipeline.md, "Days and runs").
"""

from __future__ import annotations

import dagster as dg

DAILY_START = "2024-01-01"
"""The first day a run can be asked for (bars before it are history that run loads)."""
JOB_TAG = "mi/job"
DAILY_TAGS = {JOB_TAG: "daily"}
"""The tag of every asset the daily job updates; the others are the news refresh's."""


def in_daily_job(assets: dg.AssetsDefinition) -> dg.AssetsDefinition:
    """`assets` with every key tagged as the daily job's."""
    (tagged,) = dg.map_asset_specs(lambda spec: spec.merge_attributes(tags=DAILY_TAGS), [assets])
    assert isinstance(tagged, dg.AssetsDefinition)
    return tagged


def is_daily(assets: dg.AssetsDefinition, key: dg.AssetKey) -> bool:
    return assets.tags_by_key.get(key, {}).get(JOB_TAG) == DAILY_TAGS[JOB_TAG]
