"""The Dagster adapter of a carried-state domain: a step per shard, between a plan and a stage step.

A domain's multi-asset is a graph of three ops. `<name>_plan` lists the shards of the run's
markets and fans out one `<name>_shard` step per shard (a dynamic output, mapping key
`crypto_s0of2`); each shard step updates its shard, writes its files and records what it did in
its staging record; `<name>_stage` stages every market's tables from those records and reports the
materializations and checks. Shard steps are independent, so a distributed executor runs them on
as many workers as it has; in process they run one after another. Nothing passes between the ops
but the order: what a shard did travels through the run's staging area, which every process and
host of the run reads (docs/pipeline.md).
"""

# No `from __future__ import annotations`: Dagster reads the op functions' annotations at definition time.

from collections.abc import Iterator, Mapping, Sequence

import dagster as dg
import polars as pl

from pipelines.catalog import Table
from pipelines.incremental.runner import (
    Domain,
    DomainRun,
    ShardOutcome,
    market_shards,
    run_shard,
    stage_market,
)
from pipelines.platform.check_rows import markdown
from pipelines.platform.daily import in_daily_job
from pipelines.platform.runs import RunOptions, step_name
from pipelines.warehouse.metadata import row_counts
from pipelines.warehouse.resource import WarehouseResource
from pipelines.warehouse.shards import Shard
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
    check_specs = [
        dg.AssetCheckSpec(check, asset=asset, description=text)
        for (asset, check), text in checks.items()
    ]
    shard_step = f"{name}_shard"

    @dg.op(name=f"{name}_plan", ins={"upstream": dg.In(dg.Nothing)}, out=dg.DynamicOut(dg.Nothing))
    def plan(
        context: dg.OpExecutionContext,
        warehouse: WarehouseResource,
        run_options: RunOptions,
    ) -> Iterator[dg.DynamicOutput[None]]:
        tx = warehouse.transaction(context.run.run_id, step_name(context))
        for market in run_options.markets:
            for shard in market_shards(tx, market):
                yield dg.DynamicOutput(None, mapping_key=mapping_key(shard))

    @dg.op(name=shard_step, ins={"shard": dg.In(dg.Nothing)})
    def update_shard(
        context: dg.OpExecutionContext,
        warehouse: WarehouseResource,
        run_options: RunOptions,
    ) -> None:
        tx = warehouse.transaction(context.run.run_id, step_name(context))
        outcome = run_shard(tx, shard_of(context.get_mapping_key() or ""), domain, run_options.full)
        tx.set_result(outcome.to_json())

    outs = {t.name: dg.Out(dg.Nothing) for t in outputs}
    check_outs = {spec.get_python_identifier(): dg.Out(dg.Nothing) for spec in check_specs}

    @dg.op(name=f"{name}_stage", ins={"shards": dg.In(dg.Nothing)}, out={**outs, **check_outs})
    def stage(
        context: dg.OpExecutionContext,
        warehouse: WarehouseResource,
        run_options: RunOptions,
    ) -> Iterator[dg.Output[None] | dg.AssetCheckResult]:
        tx = warehouse.transaction(context.run.run_id, step_name(context))
        outcomes = [ShardOutcome.from_json(r) for r in tx.results(f"{shard_step}[").values()]
        runs = [stage_market(tx, m, domain, outcomes) for m in run_options.markets]
        for market_run in runs:
            context.log.info(f"{name} {market_run.market}: {market_run.counts}")
        for table in outputs:
            yield _materialized(tx, table, runs)
        for asset, check in checks:
            yield _check_result(asset, check, runs)

    def compose(**upstream: object) -> dict[str, object]:
        done = stage(plan(upstream=list(upstream.values())).map(update_shard).collect())
        return dict(zip([*outs, *check_outs], done, strict=True))

    graph = dg.graph(
        name=name,
        description=f"{domain.name}: a plan step, a step per shard, a stage step",
        ins={dep: dg.GraphIn() for dep in deps},
        out={output: dg.GraphOut() for output in [*outs, *check_outs]},
    )(compose)

    def build() -> dg.AssetsDefinition:
        return dg.AssetsDefinition.from_graph(
            graph,
            keys_by_input_name={dep: dg.AssetKey(dep) for dep in deps},
            keys_by_output_name={t.name: dg.AssetKey(t.name) for t in outputs},
            descriptions_by_output_name={t.name: t.description for t in outputs},
            code_versions_by_output_name=dict.fromkeys(outs, version),
            check_specs=check_specs,
            group_name=group,
        )

    return in_daily_job(build())


def mapping_key(shard: Shard) -> str:
    """A shard as a Dagster mapping key (`crypto_s0of2`: letters, digits and underscores only)."""
    return shard.key.replace("/", "_")


def shard_of(key: str) -> Shard:
    """The shard a mapping key names."""
    market, _, rest = key.rpartition("_")
    shard = Shard.parse(f"{market}/{rest}")
    if shard is None:
        raise ValueError(f"not a shard's mapping key: {key!r}")
    return shard


def _materialized(tx: RunTransaction, table: Table, runs: Sequence[DomainRun]) -> dg.Output[None]:
    computed = sum(run.rows.get(table.name, 0) for run in runs)
    return dg.Output(
        None,
        output_name=table.name,
        metadata={
            **row_counts(tx, table.name, computed),
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
