"""What a run is asked to do (its days, its markets, full or incremental) and the step that publishes it."""

# No `from __future__ import annotations`: Dagster reads the asset functions' annotations at definition time.

import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import date, timedelta
from typing import TypeVar

import dagster as dg

from pipelines.catalog import MARKETS
from pipelines.incremental.shards import DEFAULT_SHARD_SYMBOLS
from pipelines.warehouse.resource import WarehouseResource

F = TypeVar("F", bound=Callable[..., object])

BACKFILL_TAG = "dagster/backfill"


class RunOptions(dg.ConfigurableResource):
    """Run configuration shared by every step (`resources.run_options.config` of a run)."""

    full: bool = False
    """Forget every carried state and rebuild the tables from the sources."""
    markets: list[str] = list(MARKETS)  # noqa: RUF012 (pydantic copies a config default)
    """Only these markets; the others' tables are left as they are."""
    shard_symbols: int = DEFAULT_SHARD_SYMBOLS
    """Most symbols a shard holds (`MI_SHARD_SYMBOLS`)."""


@dataclass(frozen=True)
class RunDays:
    """The days a daily run covers."""

    through: date
    """Bars dated up to this day (the partition, or the last of a backfill's range)."""
    since: date | None
    """A backfill re-reads the sources from its first day (None: only what is new)."""


def run_days(context: dg.AssetExecutionContext) -> RunDays:
    """The run's partition (or partition range, for a single-run backfill) as days."""
    window = context.partition_time_window
    through = window.end.date() - timedelta(days=1)
    backfill = context.run.tags.get(BACKFILL_TAG) is not None
    return RunDays(through=through, since=window.start.date() if backfill else None)


def single_run(build: Callable[[], F]) -> F:
    """Build an asset with `BackfillPolicy.single_run()`: a backfill of many days is one run that
    brings the tables through its last day (state is carried, so days are never run apart).

    Dagster marks the policy beta; its warning is silenced here, where the choice is made.
    """
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", category=dg.BetaWarning, message=".*backfill_policy")
        return build()


def step_name(context: dg.AssetExecutionContext | dg.OpExecutionContext) -> str:
    """The step's name, one staging record per step of a run: its op's name, with the mapping key
    of a step fanned out per shard (`trends_shard[crypto_s0of2]`)."""
    op = context.op_execution_context if isinstance(context, dg.AssetExecutionContext) else context
    key = op.get_mapping_key()
    return f"{op.op.name}[{key}]" if key else op.op.name


def build_publish(
    name: str,
    upstream: Sequence[str],
    partitions_def: dg.PartitionsDefinition | None,
    description: str,
) -> dg.AssetsDefinition:
    """The last step of a job: commit every table the run's steps staged, in one manifest version."""

    def build() -> dg.AssetsDefinition:
        @dg.asset(
            name=name,
            deps=list(upstream),
            partitions_def=partitions_def,
            backfill_policy=dg.BackfillPolicy.single_run() if partitions_def else None,
            group_name="warehouse",
            description=description,
        )
        def publish(
            context: dg.AssetExecutionContext, warehouse: WarehouseResource
        ) -> dg.MaterializeResult:
            published = warehouse.transaction(context.run.run_id, step_name(context)).commit()
            if published.published:
                context.log.info(f"published warehouse version {published.version}")
            else:
                context.log.info(f"nothing new: warehouse version {published.version} stands")
            return dg.MaterializeResult(
                metadata={
                    "version": dg.MetadataValue.int(published.version),
                    "published": published.published,
                }
            )

        return publish

    return single_run(build)
