"""Dagster adapter of the instruments domain: the `instruments` + `instrument_rejects` multi-asset."""

from collections.abc import Iterator

import dagster as dg
import polars as pl

from pipelines.catalog import INSTRUMENT_REJECTS, INSTRUMENTS
from pipelines.instruments.validate import validate_instruments
from pipelines.platform.daily import in_daily_job
from pipelines.platform.runs import RunOptions, step_name
from pipelines.prices import checks
from pipelines.prices.assets import EMBEDDED_PRICES, check_result, rejects_result
from pipelines.prices.sources.config import SourceRegistry
from pipelines.warehouse.metadata import row_counts
from pipelines.warehouse.resource import WarehouseResource
from pipelines.warehouse.tables import stage_market_file


def build_instruments(embedded: bool) -> dg.AssetsDefinition:
    """The multi-asset; in embedded mode it waits for the embedded market's files."""
    specs = [
        dg.AssetCheckSpec(
            "unique_symbol", asset="instruments", description="Each symbol once per market."
        ),
        dg.AssetCheckSpec(
            "no_rejects", asset="instrument_rejects", description="No instrument row was rejected."
        ),
    ]

    def build() -> dg.AssetsDefinition:
        @dg.multi_asset(
            name="raw_instruments",
            specs=[
                dg.AssetSpec(
                    INSTRUMENTS.name,
                    description=INSTRUMENTS.description,
                    deps=[EMBEDDED_PRICES] if embedded else [],
                ),
                dg.AssetSpec(INSTRUMENT_REJECTS.name, description=INSTRUMENT_REJECTS.description),
            ],
            check_specs=specs,
            group_name="raw",
        )
        def raw_instruments(
            context: dg.AssetExecutionContext,
            price_sources: dg.ResourceParam[SourceRegistry],
            warehouse: WarehouseResource,
            run_options: RunOptions,
        ) -> Iterator[dg.MaterializeResult | dg.AssetCheckResult]:
            tx = warehouse.transaction(context.run.run_id, step_name(context))
            cleans, rejected = [], []
            for market in run_options.markets:
                source = price_sources.for_market(market)
                clean, rejects = validate_instruments(
                    source.instruments(market), market, source.name
                )
                for table, frame in ((INSTRUMENTS, clean), (INSTRUMENT_REJECTS, rejects)):
                    stage_market_file(tx, table, market, frame)
                cleans.append(clean)
                rejected.append(rejects)
            clean, rejects = pl.concat(cleans), pl.concat(rejected)
            yield dg.MaterializeResult(
                asset_key=INSTRUMENTS.name,
                metadata={
                    **row_counts(tx, INSTRUMENTS.name, clean.height),
                    "rejects": rejects.height,
                },
            )
            yield dg.MaterializeResult(
                asset_key=INSTRUMENT_REJECTS.name,
                metadata=row_counts(tx, INSTRUMENT_REJECTS.name, rejects.height),
            )
            duplicates = checks.duplicate_keys(clean, ["market", "symbol"])
            yield check_result(
                "unique_symbol", "instruments", duplicates, dg.AssetCheckSeverity.ERROR
            )
            yield rejects_result("instrument_rejects", rejects)

        return raw_instruments

    return in_daily_job(build())
