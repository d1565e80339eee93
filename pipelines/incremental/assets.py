"""The Dagster adapter of a carried-state domain: one daily-partitioned step over every market's shards."""

# No `from __future__ import annotations`: Dagster reads the asset functions' annotations at definition time.

from collections.abc import Iterator, Mapping, Sequence

import dagster as dg
import polars as pl

from pipelines.catalog import Table
from pipelines.incremental.runner import Domain, DomainRun, run_market
from pipelines.partitions import DAILY_PARTITIONS
from pipelines.prices.checks import markdown
from pipelines.runs import RunOptions, single_run, step_name
from pipelines.warehouse.resource import WarehouseResource
from pipelines.warehouse.staging import RunTransaction


def domain_asset(
    domain: Domain,
    name: str,
    outputs: Sequence[Table],
    deps: Sequence[str],
    group: str,
    checks: Mapping[tuple[str, str], str],
) -> dg.AssetsDefinition:
    """A multi-asset writing `outputs` (and the domain's state) for every market of the run, from
    the run's prices and the domain's carried state; `checks`: (asset, check) -> description."""
    version = domain.version()
    specs = [
        dg.AssetSpec(t.name, description=t.description, deps=list(deps), code_version=version)
        for t in outputs
    ]
    check_specs = [
        dg.AssetCheckSpec(check, asset=asset, description=text)
        for (asset, check), text in checks.items()
    ]

    def build() -> dg.AssetsDefinition:
        @dg.multi_asset(
            name=name,
            specs=specs,
            check_specs=check_specs,
            partitions_def=DAILY_PARTITIONS,
            backfill_policy=dg.BackfillPolicy.single_run(),
            group_name=group,
        )
        def update(
            context: dg.AssetExecutionContext,
            warehouse: WarehouseResource,
            run_options: RunOptions,
        ) -> Iterator[dg.MaterializeResult | dg.AssetCheckResult]:
            tx = warehouse.transaction(context.run.run_id, step_name(context))
            runs = [run_market(tx, m, domain, run_options.full) for m in run_options.markets]
            for market_run in runs:
                context.log.info(f"{name} {market_run.market}: {market_run.counts}")
            for table in outputs:
                yield _materialized(tx, table, runs)
            for asset, check in checks:
                yield _check_result(asset, check, runs)

        return update

    return single_run(build)


def _materialized(
    tx: RunTransaction, table: Table, runs: Sequence[DomainRun]
) -> dg.MaterializeResult:
    total = sum(
        entry.rows for run in runs for entry in tx.partitions(table.name, run.market).values()
    )
    return dg.MaterializeResult(
        asset_key=table.name,
        metadata={
            "dagster/row_count": total,
            "rows_computed": sum(run.rows.get(table.name, 0) for run in runs),
            "symbols_by_mode": dg.MetadataValue.json({run.market: run.counts for run in runs}),
        },
    )


def _check_result(asset: str, check: str, runs: Sequence[DomainRun]) -> dg.AssetCheckResult:
    count = sum(run.offending_count.get((asset, check), 0) for run in runs)
    shown = [
        run.offending[(asset, check)].with_columns(market=pl.lit(run.market))
        for run in runs
        if run.offending_count.get((asset, check))
    ]
    rows = pl.concat(shown, how="diagonal_relaxed") if shown else pl.DataFrame()
    return dg.AssetCheckResult(
        asset_key=asset,
        check_name=check,
        passed=count == 0,
        metadata={"offending_count": count, "offending_rows": dg.MetadataValue.md(markdown(rows))},
    )
