"""The `embedded_market_files` asset: writes one market partition of the embedded market."""

# No `from __future__ import annotations` here: Dagster inspects the context annotation at runtime.

from datetime import UTC, datetime, time

import dagster as dg

from pipelines.embedded_market.market import write_embedded_market
from pipelines.embedded_market.universe import split_instruments
from pipelines.partitions import MARKET_PARTITIONS
from pipelines.settings import PipelineSettings


def resolve_as_of(settings: PipelineSettings, now: datetime) -> datetime:
    """Now floored to the hour, or the end date's last second when one is set (never after now).

    Flooring to the hour makes repeated runs within an hour no-ops (the generator is idempotent).
    """
    floored = now.astimezone(UTC).replace(minute=0, second=0, microsecond=0)
    if settings.end_date is None:
        return floored
    end = datetime.combine(settings.end_date, time(23, 59, 59), UTC)
    return min(end, floored)


def instruments_for(settings: PipelineSettings, market: str) -> int | None:
    """This market's share of a scaled universe, or None for the default universe."""
    if settings.instruments is None:
        return None
    return split_instruments(settings.instruments)[market]


def build_embedded_market_asset(settings: PipelineSettings) -> dg.AssetsDefinition:
    """The asset, with `settings` bound by closure (nothing reads the environment here)."""

    @dg.asset(
        name="embedded_market_files",
        partitions_def=MARKET_PARTITIONS,
        group_name="sources",
        description=(
            "Deterministic embedded market: instruments, daily prices and news feeds of one market, "
            "written in the file-drop layout under the embedded sources folder."
        ),
    )
    def embedded_market_files(context: dg.AssetExecutionContext) -> dg.MaterializeResult:
        market = context.partition_key
        manifest = write_embedded_market(
            settings.embedded_dir,
            market,
            seed=settings.seed,
            as_of=resolve_as_of(settings, datetime.now(UTC)),
            instruments=instruments_for(settings, market),
        )
        return dg.MaterializeResult(
            metadata={
                "root": dg.MetadataValue.path(str(settings.embedded_dir)),
                "as_of": manifest.as_of,
                "files": len(manifest.files),
                "instruments": manifest.instruments,
                "bars": manifest.bars,
                "news_items": manifest.news_items,
                "defects": len(manifest.defects),
                "defect_list": dg.MetadataValue.json(
                    [
                        {"kind": d.kind, "path": d.path, "location": d.location}
                        for d in manifest.defects
                    ]
                ),
                "first_date": manifest.first_date,
                "last_date": manifest.last_date,
            }
        )

    return embedded_market_files
