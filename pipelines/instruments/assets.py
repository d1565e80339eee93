"""Dagster adapters of the instruments domain: the `instruments` + `instrument_rejects` multi-asset."""

from collections.abc import Iterator

import dagster as dg
import polars as pl

from pipelines.catalog import INSTRUMENT_REJECTS, INSTRUMENTS
from pipelines.instruments.validate import validate_instruments
from pipelines.partitions import MARKET_PARTITIONS
from pipelines.prices import checks
from pipelines.prices.assets import EMBEDDED_FILES, check_result, rejects_result
from pipelines.prices.sources.config import SourceRegistry


def build_instruments(embedded: bool) -> dg.AssetsDefinition:
    """The multi-asset; in embedded mode it waits for the embedded market's files of its partition."""
    specs = [
        dg.AssetCheckSpec(
            "unique_symbol", asset="instruments", description="Each symbol once per market."
        ),
        dg.AssetCheckSpec(
            "no_rejects", asset="instrument_rejects", description="No instrument row was rejected."
        ),
    ]

    @dg.multi_asset(
        name="raw_instruments",
        outs={
            "instruments": dg.AssetOut(key="instruments", description=INSTRUMENTS.description),
            "instrument_rejects": dg.AssetOut(
                key="instrument_rejects", description=INSTRUMENT_REJECTS.description
            ),
        },
        deps=[EMBEDDED_FILES] if embedded else [],
        partitions_def=MARKET_PARTITIONS,
        check_specs=specs,
        required_resource_keys={"price_sources"},
        group_name="raw",
    )
    def raw_instruments(
        context: dg.AssetExecutionContext,
    ) -> Iterator[dg.Output[pl.DataFrame] | dg.AssetCheckResult]:
        market = context.partition_key
        registry: SourceRegistry = context.resources.price_sources
        source = registry.for_market(market)
        clean, rejects = validate_instruments(source.instruments(market), market, source.name)
        yield dg.Output(
            clean,
            output_name="instruments",
            metadata={
                "dagster/row_count": clean.height,
                "rejects": rejects.height,
                "connector": source.name,
            },
        )
        yield dg.Output(
            rejects,
            output_name="instrument_rejects",
            metadata={"dagster/row_count": rejects.height},
        )
        duplicates = checks.duplicate_keys(clean, ["symbol"])
        yield check_result("unique_symbol", "instruments", duplicates, dg.AssetCheckSeverity.ERROR)
        yield rejects_result("instrument_rejects", rejects)

    return raw_instruments
