"""Dagster adapter of the corporate actions domain: `corporate_actions` + its rejects."""

from collections.abc import Iterator

import dagster as dg
import polars as pl

from pipelines.catalog import CORPORATE_ACTION_REJECTS, CORPORATE_ACTIONS, INSTRUMENTS
from pipelines.corporate_actions.validate import validate_actions
from pipelines.platform.daily import in_daily_job
from pipelines.platform.runs import RunOptions, step_name
from pipelines.prices import checks
from pipelines.prices.assets import EMBEDDED_PRICES, check_result, rejects_result
from pipelines.prices.sources.config import SourceRegistry
from pipelines.warehouse.metadata import row_counts
from pipelines.warehouse.resource import WarehouseResource
from pipelines.warehouse.tables import stage_market_file, stored_rows

KEY = ["market", "symbol", "date", "kind"]


def build_corporate_actions(embedded: bool) -> dg.AssetsDefinition:
    """The multi-asset, after the instruments it checks symbols against (and, in embedded mode,
    the embedded market's files). Every run reads each market's actions whole: a source's list
    is small, and an action added for an old day must reach the table too."""
    specs = [
        dg.AssetCheckSpec(
            "unique_action",
            asset=CORPORATE_ACTIONS.name,
            description="Each (symbol, date, kind) once per market.",
        ),
        dg.AssetCheckSpec(
            "no_rejects",
            asset=CORPORATE_ACTION_REJECTS.name,
            description="No corporate action row was rejected.",
        ),
    ]

    def build() -> dg.AssetsDefinition:
        @dg.multi_asset(
            name="raw_corporate_actions",
            specs=[
                dg.AssetSpec(
                    CORPORATE_ACTIONS.name,
                    description=CORPORATE_ACTIONS.description,
                    deps=[INSTRUMENTS.name, *([EMBEDDED_PRICES] if embedded else [])],
                ),
                dg.AssetSpec(
                    CORPORATE_ACTION_REJECTS.name, description=CORPORATE_ACTION_REJECTS.description
                ),
            ],
            check_specs=specs,
            group_name="raw",
        )
        def raw_corporate_actions(
            context: dg.AssetExecutionContext,
            price_sources: dg.ResourceParam[SourceRegistry],
            warehouse: WarehouseResource,
            run_options: RunOptions,
        ) -> Iterator[dg.MaterializeResult | dg.AssetCheckResult]:
            tx = warehouse.transaction(context.run.run_id, step_name(context))
            cleans, rejected = [], []
            for market in run_options.markets:
                source = price_sources.for_market(market)
                listed = stored_rows(tx, INSTRUMENTS, market)["symbol"].to_list()
                clean, rejects = validate_actions(
                    source.corporate_actions(market), market, listed, source.name
                )
                for table, frame in (
                    (CORPORATE_ACTIONS, clean),
                    (CORPORATE_ACTION_REJECTS, rejects),
                ):
                    stage_market_file(tx, table, market, frame)
                cleans.append(clean)
                rejected.append(rejects)
            clean = pl.concat([CORPORATE_ACTIONS.empty(), *cleans])
            rejects = pl.concat([CORPORATE_ACTION_REJECTS.empty(), *rejected])
            yield dg.MaterializeResult(
                asset_key=CORPORATE_ACTIONS.name,
                metadata={
                    **row_counts(tx, CORPORATE_ACTIONS.name, clean.height),
                    "rejects": rejects.height,
                },
            )
            yield dg.MaterializeResult(
                asset_key=CORPORATE_ACTION_REJECTS.name,
                metadata=row_counts(tx, CORPORATE_ACTION_REJECTS.name, rejects.height),
            )
            duplicates = checks.duplicate_keys(clean, KEY)
            yield check_result(
                "unique_action", CORPORATE_ACTIONS.name, duplicates, dg.AssetCheckSeverity.ERROR
            )
            yield rejects_result(CORPORATE_ACTION_REJECTS.name, rejects)

        return raw_corporate_actions

    return in_daily_job(build())
